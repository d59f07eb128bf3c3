package conformance

import (
	"context"
	"slices"
)

// testCase is one conformance case.
type testCase struct {
	id string
	// capability, when set, is the optional capability the case tests.
	capability string
	run        func(p *probe)
}

// cases is the suite, in run order. Ids are stable: providers and CI
// select and track cases by them.
var cases = []testCase{
	{id: "auth/missing-token", run: authMissingToken},
	{id: "auth/wrong-token", run: authWrongToken},
	{id: "transport/not-found", run: transportNotFound},
	{id: "transport/body-too-large", run: transportBodyTooLarge},
	{id: "transport/malformed-json", run: transportMalformed},
	{id: "transport/unknown-field", run: transportUnknownField},
	{id: "transport/bad-identifier", run: transportBadIdentifier},
	{id: "transport/zero-sequence", run: transportZeroSequence},
	{id: "contract/echo", run: contractEcho},
	{id: "lifecycle/full", run: lifecycleFull},
	{id: "lifecycle/teardown-repeatable", run: lifecycleTeardownRepeatable},
	{id: "lifecycle/after-teardown", run: lifecycleAfterTeardown},
	{id: "lifecycle/duplicate-setup", run: lifecycleDuplicateSetup},
	{id: "exec/finish", run: execFinish},
	{id: "exec/finish-once", run: execFinishOnce},
	{id: "exec/lost-finish-ack", run: execLostFinishAck},
	{id: "exec/ungranted-method", run: execUngranted},
	{id: "deadline/timeout", run: deadlineTimeout},
	{id: "cancel/running", capability: CapCancel, run: cancelRunning},
	{id: "concurrency/shared-binding", run: concurrencyShared},
	{id: "concurrency/isolated-bindings", run: concurrencyIsolated},
	{id: "failure/unknown-request", run: failureUnknownRequest},
	{id: "failure/unknown-descriptor", run: failureUnknownDescriptor},
	{id: "failure/unknown-method", run: failureUnknownMethod},
	{id: "failure/well-formed", run: failureWellFormed},
	{id: "lazy/first-use", capability: CapLazyAllocation, run: lazyFirstUse},
	{id: "turn-end/release", capability: CapTurnEndRelease, run: turnEndRelease},
	{id: "methods/declared", capability: CapMethods, run: methodsDeclared},
	{id: "reporter/observation", capability: CapReporter, run: reporterObservation},
	{id: "restart/binding", capability: CapRestart, run: restartBinding},
	{id: "capabilities/expected", run: capabilitiesExpected},
}

func runCase(t T, c testCase, newTarget func(T) Target, o Options) {
	t.Helper()
	tg := newTarget(t)
	if c.capability != "" && !tg.declared(c.capability) {
		if slices.Contains(o.Expect, c.capability) {
			t.Fatalf("capability %q is expected (Options.Expect) but the target does not declare it\n  rule: %s", c.capability, ruleExpect)
		}
		t.Skipf("capability %q not declared by the target", c.capability)
	}
	ctx, cancel := context.WithTimeout(t.Context(), o.Timeout)
	t.Cleanup(cancel)
	c.run(newProbe(t, ctx, tg, o))
}

func capabilitiesExpected(p *probe) {
	for _, name := range p.o.Expect {
		if !slices.Contains(allCapabilities, name) {
			p.fail(ruleExpect, nil, "Options.Expect names %q, which is not a capability (known: %v)", name, allCapabilities)
			continue
		}
		if !p.tg.declared(name) {
			p.fail(ruleExpect, nil, "capability %q is expected but no longer declared (declared: %v)", name, p.tg.Declared())
		}
	}
}
