package pythonuv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

type lockedOutput struct {
	Input  map[string]any `json:"input"`
	Six    string         `json:"six"`
	Marker string         `json:"marker"`
}

// preparationEvents returns the preparation events emitted for one
// execution, as "phase/status".
func preparationEvents(t *testing.T, r *rig, session string, seq uint64) []string {
	t.Helper()
	var out []string
	for _, c := range r.brain.Filter(envtest.Execution(session, seq, envapi.MethodEmit)) {
		var in struct {
			EventType string           `json:"event_type"`
			Data      PreparationEvent `json:"data"`
		}
		if err := json.Unmarshal(c.Input, &in); err != nil {
			t.Fatalf("emit input %s: %v", c.Input, err)
		}
		if in.EventType != PreparationEventType {
			t.Fatalf("unexpected event type %q", in.EventType)
		}
		out = append(out, in.Data.Phase+"/"+in.Data.Status)
	}
	return out
}

func TestConcurrentFirstExecutesShareOnePreparation(t *testing.T) {
	r := newRig(t, nil)
	sessions := []*envtest.Commands{r.attach("s1"), r.attach("s2")}
	receipts := make([]envapi.Receipt, len(sessions))
	seqs := make([]uint64, len(sessions))
	cmds := make([]envapi.Command, len(sessions))
	for i, s := range sessions {
		cmds[i] = s.Execute(impl("locked"), json.RawMessage(`{"n":`+string(rune('1'+i))+`}`), envtest.Millis(120_000))
		seqs[i] = cmds[i].Operation.Sequence
	}
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() { receipts[i] = r.post(cmds[i]) })
	}
	wg.Wait()
	for i, rc := range receipts {
		if rc.Type != envapi.ReceiptResult {
			t.Fatalf("execute of s%d: %s", i+1, describe(rc))
		}
		var out lockedOutput
		if err := json.Unmarshal(rc.Output, &out); err != nil {
			t.Fatalf("output %s: %v", rc.Output, err)
		}
		if out.Six != "1.17.0" || out.Marker != "six 1.17.0\n" || out.Input["n"] != float64(i+1) {
			t.Fatalf("s%d output %+v", i+1, out)
		}
		// The SDK finished each Tool exactly once with its output.
		if n := r.brain.Count(envtest.Execution(sessions[i].Session, seqs[i], envapi.MethodFinish)); n != 1 {
			t.Fatalf("s%d: %d finish calls", i+1, n)
		}
	}
	// The setup module ran once: it creates its marker exclusively, so a
	// second run would have crashed and failed one of the executes.
	marker := filepath.Join(r.root, "locked", ".venv", "prepared")
	if got := readFile(t, marker); got != "six 1.17.0\n" {
		t.Fatalf("marker %q", got)
	}
	// At least the execution that started the preparation saw its phases.
	var phases []string
	for i, s := range sessions {
		phases = append(phases, strings.Join(preparationEvents(t, r, s.Session, seqs[i]), ","))
	}
	want := "sync/started,sync/finished,setup/started,setup/finished"
	if phases[0] != want && phases[1] != want {
		t.Fatalf("preparation events %q, want %q in at least one", phases, want)
	}
	if !strings.Contains(r.logs.String(), "project prepared") {
		t.Fatalf("preparation not logged")
	}

	// Teardown releases the binding only; a new binding reuses the
	// installation without preparing again.
	if rc := r.post(sessions[0].Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown: %s", describe(rc))
	}
	if rc := r.post(sessions[0].Execute(impl("locked"), json.RawMessage(`{}`), nil)); rc.Code != envapi.CodeUnavailable {
		t.Fatalf("execute after teardown: %s", describe(rc))
	}
	s3 := r.attach("s3")
	cmd := s3.Execute(impl("locked"), json.RawMessage(`{"again":true}`), nil)
	rc := r.post(cmd)
	if rc.Type != envapi.ReceiptResult {
		t.Fatalf("execute of s3: %s", describe(rc))
	}
	if ev := preparationEvents(t, r, "s3", cmd.Operation.Sequence); len(ev) != 0 {
		t.Fatalf("s3 saw preparation events %v; the installation should have been reused", ev)
	}
	if n := strings.Count(r.logs.String(), "preparation phase started"); n != 2 {
		t.Fatalf("%d preparation phases started, want 2 (sync and setup once)", n)
	}
	// Detach, too, leaves the installation alone.
	if rc := r.post(s3.Detach()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("detach: %s", describe(rc))
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("installation gone after detach: %v", err)
	}
}

func TestFailedPreparationIsStickyUntilReload(t *testing.T) {
	r := newRig(t, nil)
	a, b := r.attach("a"), r.attach("b")
	cmds := []envapi.Command{
		a.Execute(impl("failing"), json.RawMessage(`{}`), envtest.Millis(120_000)),
		b.Execute(impl("failing"), json.RawMessage(`{}`), envtest.Millis(120_000)),
	}
	receipts := make([]envapi.Receipt, 2)
	var wg sync.WaitGroup
	for i := range cmds {
		wg.Go(func() { receipts[i] = r.post(cmds[i]) })
	}
	wg.Wait()
	later := r.attach("c")
	receipts = append(receipts, r.post(later.Execute(impl("failing"), json.RawMessage(`{}`), nil)))
	for i, rc := range receipts {
		d := wantFailure(t, rc, envapi.CodePreparationFailed)
		if d["phase"] != PhaseSetup || !strings.Contains(d["stderr"].(string), "fixture setup failed on purpose") {
			t.Fatalf("execute %d details %v", i, d)
		}
		if rc.Retryable {
			t.Fatalf("preparation_failed must not be retryable")
		}
	}
	venv := filepath.Join(r.root, "failing", ".venv")
	if got := readFile(t, filepath.Join(venv, "setup_attempts")); got != "attempt\n" {
		t.Fatalf("setup attempts %q, want exactly one", got)
	}
	if _, err := os.Stat(filepath.Join(venv, "prepared")); !os.IsNotExist(err) {
		t.Fatalf("prepared marker exists: %v", err)
	}

	// Reloading an unchanged configuration keeps the failure.
	cfg := fixtureConfig(uvPath(t), r.root)
	if err := r.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, r.post(later.Execute(impl("failing"), json.RawMessage(`{}`), nil)), envapi.CodePreparationFailed)
	if got := readFile(t, filepath.Join(venv, "setup_attempts")); got != "attempt\n" {
		t.Fatalf("setup attempted again after an unchanged reload: %q", got)
	}

	// Replacing the project's configuration forgets the failure: without
	// the failing hook it prepares and runs.
	cfg.Projects["failing"] = Project{Directory: filepath.Join(r.root, "failing"), Module: "tool"}
	if err := r.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	rc := r.post(later.Execute(impl("failing"), json.RawMessage(`{}`), nil))
	if rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"reached":true}`) {
		t.Fatalf("after reload: %s", describe(rc))
	}
	if got := readFile(t, filepath.Join(venv, "setup_attempts")); got != "attempt\n" {
		t.Fatalf("removed hook ran: %q", got)
	}
}

func TestBindingsDescriptorsAndConfiguration(t *testing.T) {
	r := newRig(t, nil)
	s := r.session("s")

	// Nothing runs on a binding that was never set up.
	wantFailure(t, r.post(s.Execute(impl("plain"), json.RawMessage(`{}`), nil)), envapi.CodeUnavailable)
	wantFailure(t, r.post(s.Detach()), envapi.CodeUnavailable)

	d := wantFailure(t, r.post(s.Setup(json.RawMessage(`{"directory":"/etc"}`))), envapi.CodeInvalidConfiguration)
	if d["field"] == nil {
		t.Fatalf("invalid_configuration details name no field: %v", d)
	}
	if rc := r.post(s.Setup(json.RawMessage(`{}`))); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %s", describe(rc))
	}
	wantFailure(t, r.post(s.Setup(nil)), envapi.CodeAlreadyExists)

	for _, bad := range []string{
		`{"kind":"python_project","name":"nope"}`,
		`{"kind":"python_module","name":"plain"}`,
		`{"kind":"python_project","name":"plain","module":"os"}`,
		`"plain"`,
	} {
		wantFailure(t, r.post(s.Execute(json.RawMessage(bad), json.RawMessage(`{}`), nil)), envapi.CodeUnsupported)
	}
	// A Tool needs a finish grant to complete.
	wantFailure(t, r.post(s.ExecuteWith(impl("plain"), json.RawMessage(`{}`), nil, nil)), envapi.CodeNoCallback)

	// A project without a setup hook prepares with uv sync alone.
	rc := r.post(s.Execute(impl("plain"), json.RawMessage(`{"hello":["world",1]}`), nil))
	if rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"echo":{"hello":["world",1]}}`) {
		t.Fatalf("plain: %s", describe(rc))
	}
	if _, err := os.Stat(filepath.Join(r.root, "plain", ".venv")); err != nil {
		t.Fatalf("plain was not synced: %v", err)
	}
	// The provider defines no methods.
	wantFailure(t, r.post(s.Call("release", nil)), envapi.CodeUnsupported)

	if rc := r.post(s.Detach()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("detach: %s", describe(rc))
	}
	wantFailure(t, r.post(s.Execute(impl("plain"), json.RawMessage(`{}`), nil)), envapi.CodeUnavailable)
	if rc := r.post(s.Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown of a detached binding: %s", describe(rc))
	}
}

func TestInvocationFailures(t *testing.T) {
	r := newRig(t, func(c *Config) { c.OutputLimitBytes = 1000 })
	s := r.attach("s")

	d := wantFailure(t, r.post(s.Execute(impl("crash"), json.RawMessage(`{}`), nil)), envapi.CodeExecutionFailed)
	if d["exit_code"] != float64(3) || !strings.Contains(d["stderr"].(string), "fixture crash: something went wrong") {
		t.Fatalf("crash details %v", d)
	}
	d = wantFailure(t, r.post(s.Execute(impl("not_json"), json.RawMessage(`{}`), nil)), envapi.CodeInvalidOutput)
	if d["stdout"] != "this is not json" {
		t.Fatalf("not_json details %v", d)
	}
	// Output up to the cap is answered; beyond it the group is killed.
	rc := r.post(s.Execute(impl("flood"), json.RawMessage(`{"n":998}`), nil))
	if rc.Type != envapi.ReceiptResult || len(rc.Output) != 1000 {
		t.Fatalf("flood within the cap: %d bytes, %s", len(rc.Output), rc.Type)
	}
	d = wantFailure(t, r.post(s.Execute(impl("flood"), json.RawMessage(`{"n":999}`), nil)), envapi.CodeOutputLimit)
	if d["output_limit_bytes"] != float64(1000) {
		t.Fatalf("flood details %v", d)
	}
	// The sleeper's input is validated by Python: a missing key crashes it.
	d = wantFailure(t, r.post(s.Execute(impl("sleeper"), json.RawMessage(`{}`), nil)), envapi.CodeExecutionFailed)
	if !strings.Contains(d["stderr"].(string), "KeyError") {
		t.Fatalf("sleeper details %v", d)
	}
}

func TestProcessEnvironmentIsReduced(t *testing.T) {
	t.Setenv("PYTHONUV_TEST_SECRET", "do-not-pass")
	t.Setenv("PYTHONUV_TEST_ALLOWED", "pass")
	r := newRig(t, func(c *Config) { c.EnvAllow = []string{"PYTHONUV_TEST_ALLOWED"} })
	s := r.attach("s")
	rc := r.post(s.Execute(impl("environ"), json.RawMessage(`{}`), nil))
	if rc.Type != envapi.ReceiptResult {
		t.Fatalf("environ: %s", describe(rc))
	}
	var out struct {
		Names     []string `json:"names"`
		Downloads string   `json:"uv_python_downloads"`
	}
	if err := json.Unmarshal(rc.Output, &out); err != nil {
		t.Fatal(err)
	}
	names := strings.Join(out.Names, " ")
	if strings.Contains(names, "PYTHONUV_TEST_SECRET") || !strings.Contains(names, "PYTHONUV_TEST_ALLOWED") {
		t.Fatalf("environment names %s", names)
	}
	if out.Downloads != "never" {
		t.Fatalf("UV_PYTHON_DOWNLOADS=%q", out.Downloads)
	}
}

// TestProviderTokenNeverReachesPython: the bearer token the provider
// serves with is a controller capability; a module never sees it, even
// when the operator's allow-list passes every variable of its prefix.
func TestProviderTokenNeverReachesPython(t *testing.T) {
	t.Setenv(TokenEnv, "provider-token")
	t.Setenv("BRAIN_PYTHON_UV_TEST_SETTING", "pass")
	r := newRig(t, func(c *Config) { c.EnvAllow = []string{"BRAIN_*"} })
	rc := r.post(r.attach("s").Execute(impl("environ"), json.RawMessage(`{}`), nil))
	if rc.Type != envapi.ReceiptResult {
		t.Fatalf("environ: %s", describe(rc))
	}
	var out struct {
		Names []string `json:"names"`
	}
	if err := json.Unmarshal(rc.Output, &out); err != nil {
		t.Fatal(err)
	}
	names := " " + strings.Join(out.Names, " ") + " "
	if strings.Contains(names, " "+TokenEnv+" ") || !strings.Contains(names, " BRAIN_PYTHON_UV_TEST_SETTING ") {
		t.Fatalf("environment names%s", names)
	}
	// Naming the token outright is a configuration error.
	cfg := fixtureConfig(uvPath(t), r.root)
	cfg.EnvAllow = []string{TokenEnv}
	if err := r.p.Reload(cfg); err == nil || !strings.Contains(err.Error(), TokenEnv) {
		t.Fatalf("reload with %s allowed: %v, want an error naming it", TokenEnv, err)
	}
}

// TestModulesSpeakUTF8: a module reads its input and writes its result in
// UTF-8, the encoding of the protocol's JSON, whatever encoding the
// operator's environment would give Python.
func TestModulesSpeakUTF8(t *testing.T) {
	t.Setenv("PYTHONIOENCODING", "latin-1")
	r := newRig(t, func(c *Config) { c.EnvAllow = []string{"PYTHONIOENCODING"} })
	rc := r.post(r.attach("s").Execute(impl("environ"), json.RawMessage(`{}`), nil))
	if rc.Type != envapi.ReceiptResult {
		t.Fatalf("environ: %s", describe(rc))
	}
	var out struct {
		Stdio []string `json:"stdio"`
	}
	if err := json.Unmarshal(rc.Output, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.Stdio, " ") != "utf-8 utf-8" {
		t.Fatalf("the module's stdin and stdout encodings are %q, want utf-8", out.Stdio)
	}
}

func TestCallerGivingUpDoesNotStopSharedPreparation(t *testing.T) {
	r := newRig(t, nil)
	s := r.attach("s")
	// The first caller's deadline passes while the installation is being
	// prepared: it answers timeout, and the preparation goes on.
	d := wantFailure(t, r.post(s.Execute(impl("locked"), json.RawMessage(`{}`), envtest.Millis(1))), envapi.CodeTimeout)
	if d["phase"] != "preparation" {
		t.Fatalf("timeout details %v", d)
	}
	rc := r.post(s.Execute(impl("locked"), json.RawMessage(`{"second":true}`), nil))
	if rc.Type != envapi.ReceiptResult {
		t.Fatalf("second execute: %s", describe(rc))
	}
	if got := readFile(t, filepath.Join(r.root, "locked", ".venv", "prepared")); got != "six 1.17.0\n" {
		t.Fatalf("marker %q", got)
	}
	if n := strings.Count(r.logs.String(), "preparation phase started"); n != 2 {
		t.Fatalf("%d preparation phases started, want 2", n)
	}
}
