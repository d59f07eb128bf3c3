// Package conformance is the environment/v1 conformance suite: black-box
// cases, run over real HTTP, that any environment provider must pass.
//
// Every case has a stable id ("auth/wrong-token", "exec/lost-finish-ack",
// ...; see IDs and Cases) used as its subtest name, so a provider can
// select cases with -run and CI can track them. Each failure states the
// rule it enforces in full and names what actually went wrong (no answer,
// an answer that does not decode, a wrong receipt), with the exchange: the
// request, the status and an excerpt of the body. The suite plays Brain:
// each case has a fake Brain (envtest) that serves the callback and
// reporter grants it hands out and records every call the provider makes.
//
// Answers are judged as Brain judges them. Brain follows no redirect, so
// neither does the suite: a 3xx is the answer, and no response. An answer
// Brain records as an
// invalid receipt (envapi.CheckResponse: another sequence, a credential
// quoted in an identifier, a setup, cancel, detach or teardown answered
// other than accepted, failure or unknown) fails contract/echo. A Tool's
// output is the outcome Brain records for it (envapi.ToolOutcome), its
// service calls and its answer taken in the order they arrive: a finish
// without an outcome sent before the answer finishes the Tool with the
// last result given before it, or null, whatever the answer then carries.
// To tell a finish the provider waited for from one sent after its
// answer, the fake Brain acknowledges each Tool's finish 100 ms late.
//
// # A Go provider
//
// Call Run from a test; the factory runs once per case:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t *testing.T) conformance.Target {
//			h := envsdk.NewHandler(newProvider(), &envsdk.Options{Token: "secret"})
//			return conformance.Target{
//				BaseURL: conformance.ServeHandler(t, h),
//				Token:   "secret",
//				Executes: map[string]conformance.Descriptor{
//					conformance.RoleEcho: {Implementation: ..., Input: ..., Check: ...},
//				},
//			}
//		}, nil)
//	}
//
// Cases run in parallel unless Options.Serial. Run them under -race.
//
// # A provider in another language
//
// Start the provider, describe it in a profile file and run either
//
//	go test github.com/brain-in-go/brain/conformance -run TestRemote -args \
//	    -conformance.url=http://127.0.0.1:8090 -conformance.token=$TOKEN \
//	    -conformance.profile=profile.json
//
// from a checkout of this module or from a module that requires it (outside
// any module go test finds no package to run; use the brain binary there).
// On Linux a relative -conformance.profile is read from the directory go
// test was run in; elsewhere give an absolute path ($PWD/profile.json).
// Or, with the brain binary, which prints a pass/fail/skip table and can
// write JUnit XML for CI:
//
//	brain conformance --url http://127.0.0.1:8090 --token $TOKEN \
//	    --profile profile.json --junit conformance.xml
//
// --run and --skip take case ids, globs ("auth/*") or group prefixes
// ending in "/" ("transport/"); --list prints every case id with the
// capability that gates it and its rule. The exit status is ExitPass (0)
// when no case failed, ExitFail (1) when one did or the run was
// interrupted (the cases it did not start are then reported skipped, and
// those it cut short say so), ExitUsage (2) for a bad
// command line (a --url that is not an absolute http or https URL, or that
// has a query or fragment or carries credentials, among them; the token
// goes in --token or the profile, and a password in the URL is never
// printed), an invalid profile or a --junit
// file it cannot write (found before the run; the report then replaces
// that file whole), and ExitUnreachable (3) when nothing answers at the
// URL within --wait but a gateway's 502, 503 or 504. A --skip that leaves
// no case to run is a usage error. The URL may end in a path prefix: the
// suite posts to {url}/v1/operations. All cases then share the one
// provider, each in sessions of its own. The restart case needs an in-process hook and is
// skipped remotely.
//
// The provider calls back: the grants it is handed name each case's fake
// Brain, which listens on this machine's loopback. A provider in another
// container, a CI service or on another machine does not reach that;
// --callback-host (-conformance.callback-host, Target.CallbackHost) names
// the host or address at which it reaches this machine, and the fake
// Brains then also listen on every interface, each on a port of its own.
//
// # Roles and capabilities
//
// A Target describes executions by role: "echo" (required: fast and
// deterministic), "sleep" (runs past the deadline the suite sends; used by
// the deadline and cancel cases, by contract/echo for the answers of
// stopped executes and by exec/at-most-once-running, which repeats it while
// it runs; it may run in its execute or answer returned and go on in the
// background, and either way its work must stop on the cancel or at the
// deadline), "write" and "read" (the read's check
// passes only when it observes the write's state in the same binding; used
// for sharing, isolation and restart), "allocation" (its output identifies
// the binding's allocation, so concurrency/shared-binding and
// lazy/first-use see a provider that allocates once per concurrent first
// caller), "stuck" (runs past the
// deadline, or until cancelled, and its cleanup then fails; the timeout,
// and the cancelled failure, must keep that evidence in details), "progress" (answers accepted or progress) and optionally
// "unsupported" (a descriptor the provider refuses; by default the suite
// invents one). A case whose role is not described is skipped.
//
// Optional capabilities are "cancel", "lazy-allocation", "turn-end-release",
// "methods", "reporter" and "restart". A case for an undeclared capability is
// skipped with the reason; a declared one must pass; Options.Expect (profile
// "expect") lists capabilities that must stay declared, so one that
// disappears fails.
//
// A provider written with envsdk gets binding tracking from the handler, so
// the lifecycle and failure cases pass without state of its own.
//
// # The profile
//
// The profile is a JSON object; only executes.echo is required:
//
//	{
//	  "token": "secret",
//	  "setup_configuration": {"label": "ci"},
//	  "duplicate_setup": "already_exists",
//	  "executes": {
//	    "echo":  {"implementation": {"name": "echo"}, "input": {"n": 1}, "output": {"echo": {"n": 1}}},
//	    "sleep": {"implementation": {"name": "sleep"}, "input": {"ms": 3000}, "runs_ms": 3000},
//	    "write": {"implementation": {"name": "write"}, "input": {"key": "k", "value": "v"}},
//	    "read":  {"implementation": {"name": "read"}, "input": {"key": "k"}, "output_contains": {"value": "v"}},
//	    "allocation": {"implementation": {"name": "allocation"}, "input": {}},
//	    "stuck": {"implementation": {"name": "stuck"}, "input": {}},
//	    "progress": {"implementation": {"name": "progress"}, "input": {}},
//	    "unsupported": {"implementation": {"name": "nope"}, "input": {}}
//	  },
//	  "capabilities": {
//	    "cancel": true,
//	    "lazy_allocation": true,
//	    "turn_end_release": "release",
//	    "methods": {"inspect": {}},
//	    "reporter": {"call": "report", "input": {}}
//	  },
//	  "expect": ["cancel", "lazy_allocation", "reporter"],
//	  "options": {"deadline_ms": 500, "grace_ms": 5000, "timeout_ms": 60000,
//	              "max_body_bytes": 16777216, "concurrency": 4, "serial": false}
//	}
//
// Every key is snake_case, and "expect" names capabilities as they are
// keyed under "capabilities" (cancel, lazy_allocation, turn_end_release,
// methods, reporter; not restart, which a profile cannot declare). "token"
// is used when no token flag is given. "duplicate_setup" is
// "already_exists" (the default: a second setup of one binding fails with
// that code) or "accepted". Each execute gives the implementation and input
// sent; "output" requires the Tool's output to equal the given JSON,
// "output_contains" requires every given field (recursively) to be present
// with that value, and with neither any output passes (except for "read",
// which must give one: it is what tells a binding that saw the write from
// one that did not). Only echo, write, read and allocation outputs are
// checked: "output" or "output_contains" on another role is refused.
// "runs_ms" is how long a sleep or progress execution runs when nothing
// stops it; the deadline and cancel cases watch that long for a late
// completion, deadline/absent (skipped without it) for the sleep sent
// without deadline_ms to complete ok, exec/at-most-once-running for a second run, the progress
// case for a completion it must not make. It is
// refused on the other roles. "methods" maps each call method to
// a sample input that must answer a result; methods/at-most-once calls
// each and repeats the call at its sequence, and the repeat must answer
// unknown or the first answer as it was, never a result of its own.
// "reporter" names a call that makes the provider post an observation
// with the binding's reporter grant; an empty object means setup alone
// does. When it is a call, methods/at-most-once repeats it as well, and
// an observation posted after the repeat (within half the grace) is a
// second run; reporter/observation also calls it with the acknowledgement
// of its first post lost, and a post more than the call otherwise makes
// is a retry: a provider that posts on its own schedule should name no
// call here. "options" tune the run (see
// Options): deadline_ms is the deadline the deadline case sends, grace_ms how
// late a timeout or cancelled answer may come, max_body_bytes the provider's
// body limit (413 beyond it); an option left out or 0 takes its default,
// a negative one is refused.
//
// # Running the suite elsewhere
//
// The cases are written against T, a small interface that *testing.T
// satisfies. Check runs them with a recorder instead and returns a Report;
// RunCLI builds on it.
package conformance
