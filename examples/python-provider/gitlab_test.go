package pythonprovider_test

import (
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

// gitlabJob is what the Docker executor of GitLab Runner takes from a job
// of .gitlab-ci.yml to run it.
type gitlabJob struct {
	Variables [][2]string // name and value, in order
	Services  []gitlabService
	Script    []string
}

type gitlabService struct {
	Name, Alias string
	Command     []string
}

func (j gitlabJob) variable(name string) (string, bool) {
	for _, v := range j.Variables {
		if v[0] == name {
			return v[1], true
		}
	}
	return "", false
}

// parseGitLabJob reads job from a .gitlab-ci.yml written in the block
// style of examples/ci/gitlab-ci.yml: a job's keys two spaces in,
// variables as "NAME: value", services as lists of name, alias and a
// command in JSON-compatible flow style, and the script as plain scalars,
// each folded from its continuation lines as YAML folds them. Anything
// else it meets in those keys is an error, so that a recipe it cannot
// read is not run half read.
func parseGitLabJob(text, job string) (gitlabJob, error) {
	var j gitlabJob
	lines := strings.Split(text, "\n")
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	start := slices.Index(lines, job+":")
	if start < 0 {
		return j, fmt.Errorf("no job %q", job)
	}
	key := ""
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		n := indent(l)
		switch {
		case n == 0:
			return j, nil // the next job
		case n == 2:
			key, _, _ = strings.Cut(trimmed, ":")
			continue
		}
		switch key {
		case "variables":
			name, value, ok := strings.Cut(trimmed, ":")
			if !ok || n != 4 {
				return j, fmt.Errorf("line %d: want NAME: value under variables: %q", i+1, l)
			}
			j.Variables = append(j.Variables, [2]string{name, yamlScalar(value)})
		case "services":
			item, isItem := strings.CutPrefix(trimmed, "- ")
			if isItem && n == 4 {
				j.Services = append(j.Services, gitlabService{})
			} else if n != 6 || len(j.Services) == 0 {
				return j, fmt.Errorf("line %d: want a service's name, alias or command: %q", i+1, l)
			}
			s := &j.Services[len(j.Services)-1]
			name, value, _ := strings.Cut(item, ":")
			switch name {
			case "name":
				s.Name = yamlScalar(value)
			case "alias":
				s.Alias = yamlScalar(value)
			case "command":
				if err := json.Unmarshal([]byte(strings.TrimSpace(value)), &s.Command); err != nil {
					return j, fmt.Errorf("line %d: a service command in flow style with double-quoted strings: %w", i+1, err)
				}
			default:
				return j, fmt.Errorf("line %d: unexpected service key %q", i+1, name)
			}
		case "script":
			item, isItem := strings.CutPrefix(trimmed, "- ")
			switch {
			case isItem && n == 4:
				if strings.ContainsAny(item[:1], `"'|>`) {
					return j, fmt.Errorf("line %d: only plain scalars are read: %q", i+1, l)
				}
				j.Script = append(j.Script, item)
			case n > 4 && len(j.Script) > 0:
				j.Script[len(j.Script)-1] += " " + trimmed
			default:
				return j, fmt.Errorf("line %d: want a script item or its continuation: %q", i+1, l)
			}
		}
	}
	return j, nil
}

// yamlScalar is a one-line scalar value, a trailing comment removed and
// double quotes taken off.
func yamlScalar(v string) string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, `"`) {
		var s string
		if end := strings.LastIndex(v, `"`); end > 0 && json.Unmarshal([]byte(v[:end+1]), &s) == nil {
			return s
		}
	}
	if at := strings.Index(v, " #"); at >= 0 {
		v = v[:at]
	}
	return strings.TrimSpace(v)
}

// goInstallBrain is the line of the recipe that installs brain with the
// job image's Go toolchain.
const goInstallBrain = "go install github.com/brain-in-go/brain/brain/cmd/brain@"

// TestGitLabRecipe runs the job of examples/ci/gitlab-ci.yml as GitLab
// Runner's Docker executor runs it with FF_NETWORK_PER_BUILD: a network of
// the build's own; the provider's image started on it as a service, under
// the service's alias and with the service's command after the image's
// entrypoint; and the job container, with the job's variables in its
// environment and the project checked out in its working directory,
// running the script's lines in a shell that stops at the first failing
// one. The suite the script runs must pass, its JUnit report written
// where the recipe's artifacts take it: every case, callbacks included,
// reaches the provider by its alias, and the provider reaches the suite
// at the address the script gives --callback-host.
//
// Nothing is pulled. The service's image, in place of $PROVIDER_IMAGE,
// holds this machine's Python with its standard library and provider.py.
// The job image, in place of golang, holds the brain binary TestMain
// built where go install puts it (/go/bin) and a static BusyBox for sh,
// hostname and cut; the script's go install line, which needs the
// network, is replaced by a check that brain is on PATH there.
func TestGitLabRecipe(t *testing.T) {
	dockerBin := docker(t)
	busybox := staticBusybox(t)
	data, err := os.ReadFile(filepath.Join("..", "ci", "gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := parseGitLabJob(string(data), "conformance")
	if err != nil {
		t.Fatalf("gitlab-ci.yml: %v", err)
	}
	// Without a network per build, the Docker executor links services to
	// the job container, and a service cannot reach the job: no callback
	// would arrive.
	if v, _ := job.variable("FF_NETWORK_PER_BUILD"); v != "true" {
		t.Fatalf("gitlab-ci.yml sets FF_NETWORK_PER_BUILD %q, want \"true\"", v)
	}
	if len(job.Services) != 1 || job.Services[0].Alias == "" || len(job.Services[0].Command) == 0 {
		t.Fatalf("gitlab-ci.yml services %+v, want one with an alias and a command", job.Services)
	}
	if len(job.Script) == 0 || !strings.HasPrefix(job.Script[0], goInstallBrain) {
		t.Fatalf("gitlab-ci.yml script %q, want it to start with %s...", job.Script, goInstallBrain)
	}
	script := append([]string{"command -v brain"}, job.Script[1:]...)

	providerImage := buildTagged(t, dockerBin, pythonRootfs(t), fmt.Sprintf(`FROM scratch
COPY rootfs/ /
ENTRYPOINT [%q, "-u", "/provider.py"]
`, pythonExecutable(t)))
	jobImage := buildTagged(t, dockerBin, jobRootfs(t, busybox), `FROM scratch
COPY rootfs/ /
ENV PATH=/go/bin:/bin
`)

	var b [6]byte
	_, _ = rand.Read(b[:])
	build := "brain-gitlab-" + hex.EncodeToString(b[:])
	network := build + "-network"
	if out, code := run(t, dockerBin, "network", "create", network); code != 0 {
		t.Fatalf("docker network create exited %d:\n%s", code, out)
	}
	t.Cleanup(func() { _, _ = run(t, dockerBin, "network", "rm", network) })
	var env []string
	for _, v := range job.Variables {
		env = append(env, "-e", v[0]+"="+v[1])
	}

	svc := job.Services[0]
	service := build + "-service"
	args := append([]string{"run", "-d", "--name", service, "--network", network, "--network-alias", svc.Alias}, env...)
	args = append(append(args, providerImage), svc.Command...)
	if out, code := run(t, dockerBin, args...); code != 0 {
		t.Fatalf("starting the service exited %d:\n%s", code, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := run(t, dockerBin, "logs", service)
			t.Logf("service %s (%s) log:\n%s", svc.Name, svc.Alias, out)
		}
		_, _ = run(t, dockerBin, "rm", "-f", service)
	})

	project := "/builds/provider/provider"
	work := workDir(t)
	args = append([]string{"run", "--rm", "--name", build + "-job", "--hostname", "runner-" + hex.EncodeToString(b[:]) + "-project-1-concurrent-0",
		"--network", network, "-v", work + ":" + project, "-w", project}, env...)
	args = append(args, jobImage, "sh", "-c", "set -e\n"+strings.Join(script, "\n"))
	out, code := run(t, dockerBin, args...)
	if code != conformance.ExitPass {
		t.Fatalf("the job's script exited %d, want %d\nscript:\n%s\noutput:\n%s", code, conformance.ExitPass, strings.Join(script, "\n"), out)
	}
	failed, skipped, total := junitResults(t, filepath.Join(work, "conformance.xml"))
	if len(failed) > 0 || !slices.Equal(skipped, undeclared) || total != len(conformance.IDs()) {
		t.Errorf("failed %v, skipped %v (want %v), %d cases\n%s", failed, skipped, undeclared, total, out)
	}
}

// staticBusybox finds a statically linked BusyBox, which runs in an image
// holding nothing else; without one the test skips, unless CI is set.
func staticBusybox(t *testing.T) string {
	t.Helper()
	for _, path := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		f, err := elf.Open(path)
		if err != nil {
			continue
		}
		static := !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if static {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("a static BusyBox (busybox-static) is required in CI")
	}
	t.Skip("no static BusyBox (busybox-static) installed")
	return ""
}

// jobRootfs is the build context of the job image: busybox with the
// applets the script uses, and the brain binary in /go/bin.
func jobRootfs(t *testing.T, busybox string) string {
	t.Helper()
	ctx := t.TempDir()
	root := filepath.Join(ctx, "rootfs")
	copyFile(t, busybox, filepath.Join(root, "bin", "busybox"))
	for _, applet := range []string{"sh", "hostname", "cut"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, brainBin, filepath.Join(root, "go", "bin", "brain"))
	return ctx
}

// pythonExecutable is the absolute path of the Python interpreter that
// python3 on PATH runs (through a version manager's shim, say).
func pythonExecutable(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(python3(t), "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// pythonRootfs is the build context of an image holding this machine's
// Python at the paths it has here, so that it finds its standard library
// as it does here: the interpreter, the shared libraries it loads, its
// standard library without tests, caches and site packages, and
// provider.py at /.
func pythonRootfs(t *testing.T) string {
	t.Helper()
	ctx := t.TempDir()
	root := filepath.Join(ctx, "rootfs")
	exe := pythonExecutable(t)
	out, err := exec.Command(python3(t), "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	stdlib := strings.TrimSpace(string(out))
	copyFile(t, exe, filepath.Join(root, exe))
	// The interpreter's libraries and its extension modules'.
	libs := sharedLibraries(t, exe)
	skip := []string{"__pycache__", "test", "tests", "idle_test", "site-packages", "dist-packages", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data"}
	err = filepath.WalkDir(stdlib, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != stdlib && (slices.Contains(skip, d.Name()) || strings.HasPrefix(d.Name(), "config-")) {
				return filepath.SkipDir
			}
			return nil
		}
		if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
			return nil // a dangling link, or a link to a directory
		}
		if strings.HasPrefix(d.Name(), "_tkinter") {
			return nil // the graphical toolkit, and the X libraries it loads
		}
		copyFile(t, path, filepath.Join(root, path))
		if strings.HasSuffix(d.Name(), ".so") {
			libs = append(libs, sharedLibraries(t, path)...)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("copy the standard library %s: %v", stdlib, err)
	}
	slices.Sort(libs)
	for _, lib := range slices.Compact(libs) {
		copyFile(t, lib, filepath.Join(root, lib))
	}
	copyFile(t, "provider.py", filepath.Join(root, "provider.py"))
	return ctx
}

// sharedLibraries lists the shared libraries exe loads, as ldd finds
// them; none for a static executable.
func sharedLibraries(t *testing.T, exe string) []string {
	t.Helper()
	ldd, err := exec.LookPath("ldd")
	if err != nil {
		t.Skipf("ldd is not installed: %v", err)
	}
	out, err := exec.Command(ldd, exe).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && strings.Contains(string(out), "not a dynamic executable") {
		return nil
	}
	if err != nil {
		t.Fatalf("ldd %s: %v\n%s", exe, err, out)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 3 && fields[1] == "=>" && strings.HasPrefix(fields[2], "/"):
			libs = append(libs, fields[2])
		case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
			libs = append(libs, fields[0])
		}
	}
	return libs
}

// copyFile copies the file at src, links followed, to dst, creating its
// directory; the copy is executable, as the shared libraries and programs
// copied must be.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestGitLabRecipeAgrees reads the job of examples/ci/gitlab-ci.yml
// without running it (TestGitLabRecipe runs it where Docker is): the
// suite's --url names the service by its alias at the port the service's
// command listens on, and the token the suite sends is the one the
// service's command sets.
func TestGitLabRecipeAgrees(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "ci", "gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := parseGitLabJob(string(data), "conformance")
	if err != nil {
		t.Fatalf("gitlab-ci.yml: %v", err)
	}
	if len(job.Services) != 1 {
		t.Fatalf("gitlab-ci.yml services %+v, want one", job.Services)
	}
	svc := job.Services[0]
	flag := func(args []string, name string) string {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return strings.Trim(args[i+1], `"`)
		}
		return ""
	}
	var suite []string
	for _, line := range job.Script {
		if strings.HasPrefix(line, "brain conformance ") {
			suite = strings.Fields(line)
		}
	}
	if suite == nil {
		t.Fatalf("gitlab-ci.yml script %q runs no brain conformance", job.Script)
	}
	_, port, _ := strings.Cut(flag(svc.Command, "--listen"), ":")
	if want, got := "http://"+svc.Alias+":"+port, flag(suite, "--url"); port == "" || got != want {
		t.Errorf("the suite's --url is %q, want %q (the service's alias, and the port of its --listen %q)", got, want, flag(svc.Command, "--listen"))
	}
	name, _ := strings.CutPrefix(flag(suite, "--token"), "$")
	if token, _ := job.variable(name); token == "" || token != flag(svc.Command, "--token") {
		t.Errorf("the suite sends --token %s (%q), the service's command sets %q", flag(suite, "--token"), token, flag(svc.Command, "--token"))
	}
}
