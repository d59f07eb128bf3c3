package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// echoProvider is a provider of one Execute: it answers {"echo": input}.
type echoProvider struct{ envsdk.Base }

func (echoProvider) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	return envsdk.Output(map[string]json.RawMessage{"echo": x.Input})
}

func newProvider() envsdk.Provider { return echoProvider{} }

// A Go provider runs the suite from a test of its own, as
// TestConformance does here.
func ExampleRun() {
	TestConformance := func(t *testing.T) {
		conformance.Run(t, func(t *testing.T) conformance.Target {
			h := envsdk.NewHandler(newProvider(), &envsdk.Options{Token: "secret"})
			return conformance.Target{
				BaseURL: conformance.ServeHandler(t, h),
				Token:   "secret",
				Executes: map[string]conformance.Descriptor{
					conformance.RoleEcho: {
						Implementation: json.RawMessage(`{"name":"echo"}`),
						Input:          json.RawMessage(`{"n":1}`),
						Check: func(output json.RawMessage) error {
							if string(output) != `{"echo":{"n":1}}` {
								return fmt.Errorf("output %s", output)
							}
							return nil
						},
					},
				},
			}
		}, nil)
	}
	_ = TestConformance
}

// Check runs the cases without a *testing.T and reports them; a provider
// of one Execute passes every case that applies to it, and the cases for
// roles and capabilities it does not describe are skipped.
func ExampleCheck() {
	report := conformance.Check(context.Background(), func(t conformance.T) conformance.Target {
		h := envsdk.NewHandler(newProvider(), &envsdk.Options{Token: "secret", StopGrace: time.Second})
		return conformance.Target{
			BaseURL: conformance.ServeHandler(t, h),
			Token:   "secret",
			Executes: map[string]conformance.Descriptor{
				conformance.RoleEcho: {Implementation: json.RawMessage(`{"name":"echo"}`), Input: json.RawMessage(`{"n":1}`)},
			},
		}
	}, &conformance.Options{Run: []string{"auth/", "transport/", "lifecycle/", "exec/finish"}})
	fmt.Println("failed:", report.Failed())
	fmt.Println("skipped:", report.Skipped())
	fmt.Println("every case ran:", len(report.Passed()) == len(report.Results))
	// Output:
	// failed: []
	// skipped: []
	// every case ran: true
}

// The profile of the package documentation, as a provider in another
// language would write it.
func ExampleParseProfile() {
	p, err := conformance.ParseProfile([]byte(`{
	  "token": "secret",
	  "setup_configuration": {"label": "ci"},
	  "duplicate_setup": "already_exists",
	  "executes": {
	    "echo":  {"implementation": {"name": "echo"}, "input": {"n": 1}, "output": {"echo": {"n": 1}}},
	    "sleep": {"implementation": {"name": "sleep"}, "input": {"ms": 3000}, "runs_ms": 3000},
	    "write": {"implementation": {"name": "write"}, "input": {"key": "k", "value": "v"}},
	    "read":  {"implementation": {"name": "read"}, "input": {"key": "k"}, "output_contains": {"value": "v"}},
	    "allocation": {"implementation": {"name": "allocation"}, "input": {}},
	    "stuck": {"implementation": {"name": "stuck"}, "input": {}},
	    "progress": {"implementation": {"name": "progress"}, "input": {}},
	    "unsupported": {"implementation": {"name": "nope"}, "input": {}}
	  },
	  "capabilities": {
	    "cancel": true,
	    "lazy_allocation": true,
	    "turn_end_release": "release",
	    "methods": {"inspect": {}},
	    "reporter": {"call": "report", "input": {}}
	  },
	  "expect": ["cancel", "lazy_allocation", "reporter"],
	  "options": {"deadline_ms": 500, "grace_ms": 5000, "timeout_ms": 60000,
	              "max_body_bytes": 16777216, "concurrency": 4, "serial": false}
	}`))
	if err != nil {
		panic(err)
	}
	tg := p.Target("http://127.0.0.1:8090", "")
	opts := p.RunOptions()
	fmt.Println("token:", tg.Token)
	fmt.Println("declared:", tg.Declared())
	fmt.Println("expect:", opts.Expect)
	fmt.Println("deadline:", opts.Deadline, "grace:", opts.Grace, "timeout:", opts.Timeout)
	fmt.Println("echo check:", tg.Executes[conformance.RoleEcho].Check(json.RawMessage(`{"echo":{"n":1}}`)))
	fmt.Println("sleep runs:", tg.Executes[conformance.RoleSleep].Runs)
	// Output:
	// token: secret
	// declared: [cancel lazy-allocation turn-end-release methods reporter]
	// expect: [cancel lazy-allocation reporter]
	// deadline: 500ms grace: 5s timeout: 1m0s
	// echo check: <nil>
	// sleep runs: 3s
}
