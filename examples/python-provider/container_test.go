package pythonprovider_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

// docker finds a Docker Engine; without one the test skips, unless
// BRAIN_REQUIRE_DOCKER=1.
func docker(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("docker")
	if err == nil {
		err = exec.Command(path, "info").Run()
	}
	if err != nil {
		if os.Getenv("BRAIN_REQUIRE_DOCKER") == "1" {
			t.Fatalf("a Docker Engine is required (BRAIN_REQUIRE_DOCKER=1): %v", err)
		}
		t.Skipf("no Docker Engine: %v", err)
	}
	return path
}

func run(t *testing.T, name string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if e, ok := err.(*exec.ExitError); ok {
		return string(out), e.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out), 0
}

// TestContainerImage builds the brain image from examples/ci/Dockerfile
// (scratch plus the static binary TestMain built; nothing is pulled) and
// runs the suite from it against the Python provider on the host network.
func TestContainerImage(t *testing.T) {
	dockerBin := docker(t)
	url := startProvider(t, "provider.py")
	image := buildImage(t, dockerBin)

	// The image is the binary alone: small, and no shell in it.
	out, _ := run(t, dockerBin, "image", "inspect", "--format", "{{.Size}} {{len .RootFS.Layers}}", image)
	if fields := strings.Fields(out); len(fields) != 2 || fields[1] != "1" {
		t.Errorf("image size and layers %q, want one layer", out)
	}

	// The work directory is the test's own (0755, as a checkout is), so
	// the report is written only because the container runs as this user,
	// as README.md and the Dockerfile say to run it.
	work := workDir(t)
	user := strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	out, code := run(t, dockerBin, "run", "--rm", "--network", "host", "--user", user, "-v", work+":/work", image,
		"conformance", "--url", url, "--token", token, "--profile", "/work/profile.json", "--junit", "/work/conformance.xml")
	if code != conformance.ExitPass {
		t.Fatalf("brain conformance in the container exited %d, want %d\n%s", code, conformance.ExitPass, out)
	}
	failed, skipped, total := junitResults(t, filepath.Join(work, "conformance.xml"))
	if len(failed) > 0 || !slices.Equal(skipped, undeclared) || total != len(conformance.IDs()) {
		t.Errorf("failed %v, skipped %v (want %v), %d cases\n%s", failed, skipped, undeclared, total, out)
	}
	// Without a shell or anything else in the image, other commands fail.
	if _, code := run(t, dockerBin, "run", "--rm", "--entrypoint", "/bin/sh", image, "-c", "true"); code == 0 {
		t.Errorf("the image has a shell; want the brain binary alone")
	}
}

// TestContainerImageOverHTTPS: the image holds no file but the binary, so
// it trusts no certificate authority of its own; with the host's
// authorities mounted at /etc/ssl/certs, as README.md and the Dockerfile
// say, it checks a provider served over HTTPS.
func TestContainerImageOverHTTPS(t *testing.T) {
	dockerBin := docker(t)
	target, err := url.Parse(startProvider(t, "provider.py"))
	if err != nil {
		t.Fatal(err)
	}
	tlsProxy := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(tlsProxy.Close)
	image := buildImage(t, dockerBin)
	work := workDir(t)
	// The host's authorities, here the one that signed the proxy's
	// certificate.
	certs := t.TempDir()
	if err := os.Chmod(certs, 0o755); err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsProxy.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(certs, "ca-certificates.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	user := strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	check := func(mounts ...string) (string, int) {
		args := []string{"run", "--rm", "--network", "host", "--user", user, "-v", work + ":/work"}
		for _, m := range mounts {
			args = append(args, "-v", m)
		}
		args = append(args, image, "conformance", "--url", tlsProxy.URL, "--token", token,
			"--profile", "/work/profile.json", "--run", "auth/missing-token", "--wait", "30s")
		return run(t, dockerBin, args...)
	}
	if out, code := check(); code != conformance.ExitUnreachable || !strings.Contains(out, "certificate") {
		t.Errorf("without authorities: exit %d, want %d naming the certificate\n%s", code, conformance.ExitUnreachable, out)
	}
	if out, code := check(certs + ":/etc/ssl/certs:ro"); code != conformance.ExitPass {
		t.Errorf("with the host's authorities mounted: exit %d, want %d\n%s", code, conformance.ExitPass, out)
	}
}

// buildImage builds the brain image from examples/ci/Dockerfile (scratch
// plus the static binary TestMain built; nothing is pulled), removed when
// the test ends.
func buildImage(t *testing.T, dockerBin string) string {
	t.Helper()
	ctxDir := t.TempDir()
	bin, err := os.ReadFile(brainBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "brain"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join("..", "ci", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return buildTagged(t, dockerBin, ctxDir, string(dockerfile))
}

// buildTagged builds an image from dockerfile in the context ctxDir under
// a tag of its own, removed when the test ends.
func buildTagged(t *testing.T, dockerBin, ctxDir, dockerfile string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.WriteFile(path, []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	image := "brain-conformance-test:" + hex.EncodeToString(b[:])
	if out, code := run(t, dockerBin, "build", "-q", "-t", image, "-f", path, ctxDir); code != 0 {
		t.Fatalf("docker build exited %d:\n%s", code, out)
	}
	t.Cleanup(func() { _, _ = run(t, dockerBin, "image", "rm", "-f", image) })
	return image
}

// workDir is a directory holding the provider's profile, to mount in the
// container: the test's own, 0755 as a checkout is.
func workDir(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	profile, err := os.ReadFile("profile.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "profile.json"), profile, 0o644); err != nil {
		t.Fatal(err)
	}
	return work
}

// TestCIExamplesUseRealFlags: every flag the CI examples and the
// Dockerfile pass to brain conformance is one the command knows, so the
// examples cannot drift from it.
func TestCIExamplesUseRealFlags(t *testing.T) {
	help, _ := brain(t, "conformance", "--help")
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z][a-z-]*)`).FindAllStringSubmatch(help, -1) {
		known[m[1]] = true
	}
	if !known["url"] || !known["junit"] {
		t.Fatalf("no flags found in the help:\n%s", help)
	}
	flagRe := regexp.MustCompile(`(?:^|\s)--([a-z][a-z-]*)`)
	for _, name := range []string{"github-actions.yml", "gitlab-ci.yml", "Dockerfile"} {
		data, err := os.ReadFile(filepath.Join("..", "ci", name))
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, cmd := range conformanceCommands(string(data)) {
			found++
			for _, m := range flagRe.FindAllStringSubmatch(cmd, -1) {
				if !known[m[1]] {
					t.Errorf("%s passes --%s to brain conformance, which does not know it:\n%s", name, m[1], cmd)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s runs no brain conformance command", name)
		}
	}
}

// TestContainerRunsAsCaller: every documented docker run of the brain
// image runs it as the caller's user. The image's own user (65532) may not
// write into the mounted directory, so without --user a passing run writes
// no report and exits 2.
func TestContainerRunsAsCaller(t *testing.T) {
	for _, name := range []string{"../../README.md", "../ci/Dockerfile", "../ci/github-actions.yml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, "docker run") || strings.Contains(line, "--entrypoint") {
				continue
			}
			found++
			if !strings.Contains(line, "--user") {
				t.Errorf("%s runs the image without --user:\n%s", name, strings.TrimSpace(line))
			}
		}
		if found == 0 {
			t.Errorf("%s has no docker run of the image", name)
		}
	}
}

// conformanceCommands finds each "conformance --..." invocation in text
// with its continuation lines (after a trailing backslash, or indented
// lines starting with "--"), comment markers removed.
func conformanceCommands(text string) []string {
	lines := strings.Split(text, "\n")
	clean := func(l string) string { return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")) }
	var out []string
	for i := 0; i < len(lines); i++ {
		l := clean(lines[i])
		at := strings.Index(l, "conformance --")
		if at < 0 {
			if at = strings.Index(l, "conformance \\"); at < 0 {
				continue
			}
		}
		cmd := l[at+len("conformance"):]
		for i+1 < len(lines) {
			next := clean(lines[i+1])
			if !strings.HasSuffix(strings.TrimSpace(cmd), "\\") && !strings.HasPrefix(next, "--") {
				break
			}
			cmd += "\n" + next
			i++
		}
		out = append(out, cmd)
	}
	return out
}
