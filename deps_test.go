package deps_test

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/brain-in-go/brain"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// listPackages returns every package of the module with its direct imports
// and its transitive dependencies (test files excluded).
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		all[p.ImportPath] = p
	}
	if len(all) == 0 {
		t.Fatal("go list found no packages")
	}
	return all
}

func under(path, dir string) bool {
	full := module + "/" + dir
	return path == full || strings.HasPrefix(path, full+"/")
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// TestDependencyRules enforces the import rules of DESIGN.md.
func TestDependencyRules(t *testing.T) {
	all := listPackages(t)
	for path, p := range all {
		for _, dep := range p.Deps {
			if (under(path, "envsdk") || under(path, "conformance")) && under(dep, "brain") {
				t.Errorf("%s depends on %s: envsdk and conformance must not import brain/", path, dep)
			}
			if under(path, "brain") && path != module+"/brain/cmd/brain" && !under(path, "brain/cmd/brain") &&
				(under(dep, "providers") || under(dep, "examples")) {
				t.Errorf("%s depends on %s: only brain/cmd/brain may import providers/ or examples/", path, dep)
			}
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/tetratelabs/wazero") && !under(path, "brain/internal/loophost") {
				t.Errorf("%s imports %s: wazero belongs to brain/internal/loophost only", path, imp)
			}
			if strings.HasPrefix(imp, "github.com/docker/docker") && !under(path, "providers/docker") {
				t.Errorf("%s imports %s: the Docker client belongs to providers/docker only", path, imp)
			}
			if strings.HasPrefix(imp, "github.com/hashicorp/go-retryablehttp") && path != module+"/envsdk" {
				t.Errorf("%s imports %s: go-retryablehttp belongs to envsdk only", path, imp)
			}
		}
	}
	// Packages that own a wire or disk format depend on the standard
	// library only (envapi may use the validator).
	stdOnly := map[string][]string{
		"brain/internal/journal": nil,
		"brain/api":              nil,
		"envsdk/envapi":          {"github.com/go-playground/", "github.com/gabriel-vasile/mimetype", "github.com/leodido/go-urn", "golang.org/x/"},
	}
	for dir, allowed := range stdOnly {
		p, ok := all[module+"/"+dir]
		if !ok {
			continue // not written yet
		}
	deps:
		for _, dep := range p.Deps {
			if isStd(dep) || strings.HasPrefix(dep, module+"/"+dir) {
				continue
			}
			for _, a := range allowed {
				if strings.HasPrefix(dep, a) {
					continue deps
				}
			}
			t.Errorf("%s depends on %s: it may use the standard library only", dir, dep)
		}
	}
}

// TestPackageDocs checks that every package has exactly one package doc
// comment, so that godoc shows one coherent overview.
func TestPackageDocs(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Dir        string
			GoFiles    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if len(p.GoFiles) == 0 {
			continue // a directory of tests only, such as the module root
		}
		var docs []string
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if f.Doc != nil {
				docs = append(docs, name)
			}
		}
		if len(docs) != 1 {
			t.Errorf("package %s has %d package doc comments (%v), want exactly one", p.ImportPath, len(docs), docs)
		}
	}
}

// guestSDKViolations answers the dependencies of the guest SDK
// (brain/agentloop and the packages under it) outside the standard
// library, brain/api and brain/agentloop itself: a loop compiled for
// wasip1 must not pull the host into its module.
func guestSDKViolations(all map[string]pkg) []string {
	var bad []string
	for path, p := range all {
		if !under(path, "brain/agentloop") {
			continue
		}
		for _, dep := range p.Deps {
			if isStd(dep) || under(dep, "brain/api") || under(dep, "brain/agentloop") {
				continue
			}
			bad = append(bad, path+" depends on "+dep)
		}
	}
	return bad
}

func TestGuestSDKImportsOnlyAPI(t *testing.T) {
	for _, v := range guestSDKViolations(listPackages(t)) {
		t.Errorf("%s: brain/agentloop may use the standard library and brain/api only", v)
	}
	// The rule itself, on a graph with a back-edge into the host.
	graph := map[string]pkg{
		module + "/brain/agentloop":         {Deps: []string{"fmt", module + "/brain/api"}},
		module + "/brain/agentloop/builtin": {Deps: []string{"embed"}},
		module + "/brain/agentloop/x":       {Deps: []string{module + "/brain/agentloop", module + "/brain/internal/journal"}},
		module + "/brain/agentlooptest":     {Deps: []string{module + "/brain/internal/loophost"}},
	}
	got := guestSDKViolations(graph)
	if want := module + "/brain/agentloop/x depends on " + module + "/brain/internal/journal"; len(got) != 1 || got[0] != want {
		t.Errorf("on a synthetic graph: got %q, want [%q]", got, want)
	}
}
