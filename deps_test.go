package deps_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
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

// TestDependencyRules enforces the import rules of DESIGN.md on the
// module's import graph.
func TestDependencyRules(t *testing.T) {
	for _, v := range checkRules(listPackages(t)) {
		t.Error(v)
	}
}

// TestRulesCatchBackEdges runs the rules on synthetic import graphs: one
// that keeps every rule, and copies of it with one edge against the
// direction of flow each, which must fail naming that edge.
func TestRulesCatchBackEdges(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	graph := func() map[string]pkg {
		g := map[string]pkg{}
		add := func(path string, imports ...string) {
			p := pkg{ImportPath: m(path)}
			for _, i := range imports {
				if !isStd(i) {
					i = m(i)
				}
				p.Imports = append(p.Imports, i)
			}
			g[p.ImportPath] = p
		}
		add("brain/api", "encoding/json")
		add("brain/agentloop", "brain/api")
		add("brain/internal/uring", "syscall")
		add("brain/internal/journal", "os", "brain/internal/uring")
		add("brain/internal/session", "brain/internal/journal", "brain/api")
		add("brain/internal/loophost", "brain/agentloop", "github.com/tetratelabs/wazero")
		add("brain/internal/envbind", "brain/internal/session", "net/http")
		add("brain/internal/httpapi", "brain/internal/session", "brain/internal/loophost", "brain/internal/envbind")
		add("brain", "brain/internal/httpapi", "brain/internal/session", "brain/internal/loophost", "brain/internal/envbind")
		add("brain/cmd/brain", "brain", "providers/workspace")
		add("envsdk/envapi", "encoding/json")
		add("envsdk", "envsdk/envapi")
		add("providers/workspace", "envsdk")
		for path, p := range g {
			p.Deps = closure(g, path)
			g[path] = p
		}
		return g
	}
	if v := checkRules(graph()); len(v) != 0 {
		t.Fatalf("the rules refuse a graph that keeps them: %v", v)
	}
	for _, edge := range [][2]string{
		{"brain/internal/session", "brain/internal/httpapi"},
		{"brain/internal/loophost", "brain/internal/httpapi"},
		{"brain/internal/session", "brain/internal/envbind"},
		{"brain/internal/session", "brain/internal/loophost"},
		{"brain/agentloop", "brain/internal/journal"},
		{"brain/internal/journal", "brain/api"},
		{"brain/internal/uring", "brain/api"},
		{"brain/internal/session", "brain/internal/uring"},
		{"brain/cmd/brain", "brain/internal/session"},
		{"envsdk", "brain/api"},
		{"brain/internal/httpapi", "providers/workspace"},
		{"brain/internal/envbind", "github.com/tetratelabs/wazero"},
		{"brain/internal/session", "go.opentelemetry.io/otel/sdk/trace"},
		{"envsdk", "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"},
	} {
		g := graph()
		from, to := m(edge[0]), edge[1]
		if !strings.Contains(to, ".") {
			to = m(to)
		}
		p := g[from]
		p.Imports = append(p.Imports, to)
		g[from] = p
		for path, p := range g {
			p.Deps = closure(g, path)
			g[path] = p
		}
		v := checkRules(g)
		named := false
		for _, s := range v {
			named = named || strings.Contains(s, edge[0]) && strings.Contains(s, edge[1])
		}
		if !named {
			t.Errorf("the back-edge %s -> %s passed the rules (violations: %v)", edge[0], edge[1], v)
		}
	}
}

// closure answers the transitive imports of path in g.
func closure(g map[string]pkg, path string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, i := range g[p].Imports {
			if !seen[i] {
				seen[i] = true
				walk(i)
			}
		}
	}
	walk(path)
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	return out
}

// checkRules answers every violation of the dependency rules in all.
func checkRules(all map[string]pkg) []string {
	var v []string
	fail := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	for path, p := range all {
		for _, dep := range p.Deps {
			if (under(path, "envsdk") || under(path, "conformance")) && under(dep, "brain") {
				fail("%s depends on %s: envsdk and conformance must not import brain/", path, dep)
			}
			// Providers join Brain's traces through the OpenTelemetry API
			// and W3C propagation; the SDK is the provider's choice.
			if under(path, "envsdk") && (strings.HasPrefix(dep, "go.opentelemetry.io/otel/sdk") ||
				strings.HasPrefix(dep, "go.opentelemetry.io/otel/exporters") || strings.HasPrefix(dep, "go.opentelemetry.io/proto")) {
				fail("%s depends on %s: envsdk may use the OpenTelemetry API and propagation only", path, dep)
			}
			if under(path, "brain") && !under(path, "brain/cmd/brain") &&
				(under(dep, "providers") || under(dep, "examples")) {
				fail("%s depends on %s: only brain/cmd/brain may import providers/ or examples/", path, dep)
			}
			// The engine is the centre: the transports depend on it, never
			// the other way round.
			if under(path, "brain/internal/session") &&
				(under(dep, "brain/internal/loophost") || under(dep, "brain/internal/envbind") || under(dep, "brain/internal/httpapi")) {
				fail("%s depends on %s: session imports neither loophost, envbind nor httpapi", path, dep)
			}
			// The guest SDK is built for Wasm: the standard library,
			// brain/api and the shared guest packages only (its test
			// helpers are not part of it).
			if under(path, "brain/agentloop") && !under(path, "brain/agentlooptest") &&
				!guestDep(dep) && !under(dep, "brain/agentloop") {
				fail("%s depends on %s: the guest SDK may use the standard library and brain/api only", path, dep)
			}
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/tetratelabs/wazero") && !under(path, "brain/internal/loophost") {
				fail("%s imports %s: wazero belongs to brain/internal/loophost only", path, imp)
			}
			if (strings.HasPrefix(imp, "github.com/docker/docker") || strings.HasPrefix(imp, "github.com/containerd/")) && !under(path, "providers/docker") {
				fail("%s imports %s: the Docker client and its error kinds belong to providers/docker only", path, imp)
			}
			if strings.HasPrefix(imp, "github.com/santhosh-tekuri/jsonschema") && path != module+"/brain/client" {
				fail("%s imports %s: the JSON Schema validator belongs to brain/client only", path, imp)
			}
			if strings.HasPrefix(imp, "github.com/prometheus/") && path != module+"/brain/internal/metrics" {
				fail("%s imports %s: the Prometheus client belongs to brain/internal/metrics only", path, imp)
			}
			// The OpenTelemetry SDK and its OTLP exporters belong to the
			// package that builds the export; the others instrument against
			// the API. The OTLP wire types serve its test receiver only.
			if (strings.HasPrefix(imp, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(imp, "go.opentelemetry.io/otel/exporters")) &&
				path != module+"/brain/internal/tracing" {
				fail("%s imports %s: the OpenTelemetry SDK and exporters belong to brain/internal/tracing only", path, imp)
			}
			if strings.HasPrefix(imp, "go.opentelemetry.io/proto/otlp") && path != module+"/internal/otlptest" {
				fail("%s imports %s: the OTLP wire types belong to internal/otlptest only", path, imp)
			}
			if strings.HasPrefix(imp, "github.com/hashicorp/go-retryablehttp") && path != module+"/envsdk" {
				fail("%s imports %s: go-retryablehttp belongs to envsdk only", path, imp)
			}
			// io_uring is set up in one place, for the journal's flushes.
			if under(imp, "brain/internal/uring") && !under(path, "brain/internal/journal") {
				fail("%s imports %s: brain/internal/uring serves brain/internal/journal only", path, imp)
			}
			// Routes flow one way: every route lives in httpapi, which
			// depends on the packages whose methods it serves.
			if under(imp, "brain/internal/httpapi") && under(path, "brain/internal") && !under(path, "brain/internal/httpapi") {
				fail("%s imports %s: only httpapi serves routes; nothing else under brain/internal imports it", path, imp)
			}
			// The command maps flags to brain.Config and nothing else.
			if under(path, "brain/cmd/brain") && under(imp, "brain/internal") {
				fail("%s imports %s: brain/cmd/brain builds Brain through brain.Config only", path, imp)
			}
		}
	}
	// Packages that own a wire or disk format depend on the standard
	// library only (envapi may use the validator).
	stdOnly := map[string][]string{
		"brain/internal/journal": {module + "/brain/internal/uring"},
		"brain/internal/uring":   nil,
		"brain/internal/commits": nil,
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
			fail("%s depends on %s: it may use the standard library only", dir, dep)
		}
	}
	sort.Strings(v)
	return v
}

// TestOnlyHTTPAPIServesRoutes checks that no package under brain/internal
// but httpapi builds HTTP handlers: no ServeMux, no HandlerFunc, no
// ServeHTTP method.
func TestOnlyHTTPAPIServesRoutes(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles", "./brain/internal/...").Output()
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
		if under(p.ImportPath, "brain/internal/httpapi") {
			continue
		}
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, hit := range servesRoutes(f) {
				t.Errorf("%s/%s: %s: only httpapi serves routes", p.ImportPath, name, hit)
			}
		}
	}
}

// servesRoutes answers the route-serving constructs in f.
func servesRoutes(f *ast.File) []string {
	var hits []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil && n.Name.Name == "ServeHTTP" {
				hits = append(hits, "a ServeHTTP method")
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" {
				switch n.Sel.Name {
				case "NewServeMux", "ServeMux", "HandlerFunc", "HandleFunc", "Handle":
					hits = append(hits, "http."+n.Sel.Name)
				}
			}
		}
		return true
	})
	return hits
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

// guestDep reports whether a guest SDK may depend on dep: the standard
// library, brain/api, and the codec and ABI glue the two guest SDKs share
// (which, being their dependencies, are held to the same rule).
func guestDep(dep string) bool {
	return isStd(dep) || under(dep, "brain/api") ||
		under(dep, "brain/internal/guestjson") || under(dep, "brain/internal/guestabi")
}

// guestSDKViolations answers the dependencies of the guest SDK
// (brain/agentloop and the packages under it) outside the standard
// library, brain/api, the shared guest packages and brain/agentloop
// itself: a loop compiled for wasip1 must not pull the host into its
// module.
func guestSDKViolations(all map[string]pkg) []string {
	var bad []string
	for path, p := range all {
		if !under(path, "brain/agentloop") {
			continue
		}
		for _, dep := range p.Deps {
			if guestDep(dep) || under(dep, "brain/agentloop") {
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
		module + "/brain/agentloop":         {Deps: []string{"fmt", module + "/brain/api", module + "/brain/internal/guestjson"}},
		module + "/brain/agentloop/builtin": {Deps: []string{"embed"}},
		module + "/brain/agentloop/x":       {Deps: []string{module + "/brain/agentloop", module + "/brain/internal/journal"}},
		module + "/brain/agentlooptest":     {Deps: []string{module + "/brain/internal/loophost"}},
	}
	got := guestSDKViolations(graph)
	if want := module + "/brain/agentloop/x depends on " + module + "/brain/internal/journal"; len(got) != 1 || got[0] != want {
		t.Errorf("on a synthetic graph: got %q, want [%q]", got, want)
	}
}

// TestGuestSDKDependencies keeps the Tool guest SDK small: brain/tool,
// like brain/agentloop, builds to Wasm against the standard library,
// brain/api and the shared guest packages only, for the host platform and
// for wasip1.
func TestGuestSDKDependencies(t *testing.T) {
	p, ok := listPackages(t)[module+"/brain/tool"]
	if !ok {
		t.Fatal("brain/tool not found")
	}
	deps := p.Deps
	cmd := exec.Command("go", "list", "-deps", "./brain/tool", "./brain/agentloop")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list for wasip1: %v", err)
	}
	wasm := strings.Fields(string(out))
	if !slices.Contains(wasm, module+"/brain/internal/guestabi") {
		t.Fatalf("the wasip1 build of the guest SDKs does not list guestabi: %q", wasm)
	}
	for _, dep := range append(deps, wasm...) {
		if under(dep, "brain/tool") || under(dep, "brain/agentloop") {
			continue
		}
		if !guestDep(dep) {
			t.Errorf("brain/tool depends on %s: a guest SDK may use the standard library and brain/api only", dep)
		}
	}
}

// TestPostgresClientOwner keeps the PostgreSQL client in one package: only
// brain/internal/pgstore (and its test helpers) import pgx.
func TestPostgresClientOwner(t *testing.T) {
	for path, p := range listPackages(t) {
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/jackc/pgx") && !under(path, "brain/internal/pgstore") {
				t.Errorf("%s imports %s: pgx belongs to brain/internal/pgstore only", path, imp)
			}
		}
	}
}

// TestTestOnlyDependencies keeps test drivers out of the binary: chromedp
// is imported only by the inspector's browser test; the OpenAPI validator
// only by brain/internal/openapicheck, which only tests import.
func TestTestOnlyDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	owners := map[string]string{
		"github.com/chromedp/": module + "/brain/internal/ui",
	}
	const checker = module + "/brain/internal/openapicheck"
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		for _, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
			if strings.HasPrefix(imp, "github.com/pb33f/") && p.ImportPath != checker {
				t.Errorf("%s (or its tests) imports %s: the OpenAPI validator belongs to %s only", p.ImportPath, imp, checker)
			}
		}
		for _, imp := range p.Imports {
			if imp == checker {
				t.Errorf("%s imports %s: only tests may use it", p.ImportPath, imp)
			}
		}
		for prefix, owner := range owners {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, prefix) {
					t.Errorf("%s imports %s: it belongs to the tests of %s only", p.ImportPath, imp, owner)
				}
			}
			for _, imp := range append(p.TestImports, p.XTestImports...) {
				if strings.HasPrefix(imp, prefix) && p.ImportPath != owner {
					t.Errorf("tests of %s import %s: it belongs to the tests of %s only", p.ImportPath, imp, owner)
				}
			}
		}
	}
}
