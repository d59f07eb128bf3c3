package conformance

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
)

// testCase is one conformance case.
type testCase struct {
	id string
	// rule is the main rule the case checks (its failures may cite
	// others).
	rule rule
	// capability, when set, is the optional capability the case tests.
	capability string
	run        func(p *probe)
}

// cases is the suite, in run order. Ids are stable: providers and CI
// select and track cases by them.
var cases = []testCase{
	{id: "auth/missing-token", rule: ruleAuth, run: authMissingToken},
	{id: "auth/wrong-token", rule: ruleAuth, run: authWrongToken},
	{id: "transport/not-found", rule: ruleRoute, run: transportNotFound},
	{id: "transport/body-too-large", rule: ruleBodyLimit, run: transportBodyTooLarge},
	{id: "transport/malformed-json", rule: ruleStrict, run: transportMalformed},
	{id: "transport/unknown-field", rule: ruleStrict, run: transportUnknownField},
	{id: "transport/bad-identifier", rule: ruleStrict, run: transportBadIdentifier},
	{id: "transport/zero-sequence", rule: ruleStrict, run: transportZeroSequence},
	{id: "transport/duplicate-key", rule: ruleStrict, run: transportDuplicateKey},
	{id: "transport/missing-field", rule: ruleStrict, run: transportMissingField},
	{id: "transport/wrong-contract", rule: ruleStrict, run: transportWrongContract},
	{id: "transport/refused-no-effect", rule: ruleRefused, run: transportRefusedNoEffect},
	{id: "contract/echo", rule: ruleResponse, run: contractEcho},
	{id: "lifecycle/full", rule: ruleLifecycle, run: lifecycleFull},
	{id: "lifecycle/teardown-repeatable", rule: ruleTeardown, run: lifecycleTeardownRepeatable},
	{id: "lifecycle/after-teardown", rule: ruleTeardown, run: lifecycleAfterTeardown},
	{id: "lifecycle/duplicate-setup", rule: ruleDuplicate, run: lifecycleDuplicateSetup},
	{id: "lifecycle/setup-at-most-once", rule: ruleSetupOnce, run: lifecycleSetupOnce},
	{id: "exec/finish", rule: ruleFinish, run: execFinish},
	{id: "exec/finish-once", rule: ruleFinishOnce, run: execFinishOnce},
	{id: "exec/lost-finish-ack", rule: ruleLostAck, run: execLostFinishAck},
	{id: "exec/ungranted-method", rule: ruleGranted, run: execUngranted},
	{id: "exec/at-most-once", rule: ruleOnce, run: execAtMostOnce},
	{id: "exec/at-most-once-running", rule: ruleOnce, run: execAtMostOnceRunning},
	{id: "exec/progress-receipt", rule: ruleReceipts, run: execProgressReceipt},
	{id: "deadline/timeout", rule: ruleTimeout, run: deadlineTimeout},
	{id: "deadline/absent", rule: ruleNoDeadline, run: deadlineAbsent},
	{id: "deadline/cleanup-evidence", rule: ruleEvidence, run: deadlineCleanupEvidence},
	{id: "cancel/running", rule: ruleCancel, capability: CapCancel, run: cancelRunning},
	{id: "cancel/cleanup-evidence", rule: ruleEvidence, capability: CapCancel, run: cancelCleanupEvidence},
	{id: "cancel/at-most-once", rule: ruleCancelOnce, capability: CapCancel, run: cancelAtMostOnce},
	{id: "concurrency/shared-binding", rule: ruleShared, run: concurrencyShared},
	{id: "concurrency/isolated-bindings", rule: ruleIsolation, run: concurrencyIsolated},
	{id: "failure/unknown-request", rule: ruleUnknownReq, run: failureUnknownRequest},
	{id: "failure/unknown-descriptor", rule: ruleUnsupport, run: failureUnknownDescriptor},
	{id: "failure/unknown-method", rule: ruleUnsupport, run: failureUnknownMethod},
	{id: "failure/well-formed", rule: ruleFailure, run: failureWellFormed},
	{id: "lazy/first-use", rule: ruleShared, capability: CapLazyAllocation, run: lazyFirstUse},
	{id: "turn-end/release", rule: ruleTurnEnd, capability: CapTurnEndRelease, run: turnEndRelease},
	{id: "methods/declared", rule: ruleMethods, capability: CapMethods, run: methodsDeclared},
	{id: "methods/at-most-once", rule: ruleCallOnce, capability: CapMethods, run: methodsAtMostOnce},
	{id: "reporter/observation", rule: ruleReporter, capability: CapReporter, run: reporterObservation},
	{id: "restart/binding", rule: ruleLoss, capability: CapRestart, run: restartBinding},
	{id: "capabilities/expected", rule: ruleExpect, run: capabilitiesExpected},
}

// CaseInfo describes one case for listings.
type CaseInfo struct {
	// ID is the stable case id.
	ID string
	// Rule is the rule the case checks, stated in full.
	Rule string
	// Capability is the optional capability that gates the case; empty
	// when every provider must pass it.
	Capability string
}

// Cases describes every case, in run order.
func Cases() []CaseInfo {
	out := make([]CaseInfo, len(cases))
	for i, c := range cases {
		out[i] = CaseInfo{ID: c.id, Rule: string(c.rule), Capability: c.capability}
	}
	return out
}

// matchID reports whether case id matches pattern: the id itself, a glob
// (path.Match: "auth/*", "*/timeout", "exec/[fl]*") or a group prefix
// ending in "/" ("transport/").
func matchID(pattern, id string) bool {
	if pattern == id {
		return true
	}
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(id, pattern)
	}
	ok, err := path.Match(pattern, id)
	return err == nil && ok
}

// CheckPatterns returns an error naming the first pattern that is
// malformed or matches no case.
func CheckPatterns(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("conformance: case pattern %q: %w", p, err)
		}
		if !slices.ContainsFunc(cases, func(c testCase) bool { return matchID(p, c.id) }) {
			return fmt.Errorf("conformance: case pattern %q matches no case", p)
		}
	}
	return nil
}

func matchesAny(patterns []string, id string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matchID(p, id) })
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
