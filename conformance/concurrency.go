package conformance

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/brain-in-go/brain/envsdk/envtest"
)

// concurrentFirst runs n Tools of d at once on c, fails the case for each
// that does not complete and returns the outputs.
func (p *probe) concurrentFirst(r rule, c *envtest.Commands, d Descriptor, role string) []json.RawMessage {
	p.t.Helper()
	n := p.o.Concurrency
	type failure struct {
		ex  *exchange
		r   rule
		err error
	}
	errs := make(chan failure, n)
	outs := make([]json.RawMessage, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, ex, r, err := p.tool(c, d)
			if err != nil {
				errs <- failure{ex, r, err}
			}
			outs[i] = out
		})
	}
	wg.Wait()
	close(errs)
	for f := range errs {
		p.fail(r, f.ex, "one of %d concurrent first %q executes on one binding: %v (%s)", n, role, f.err, f.r)
	}
	if p.t.Failed() {
		p.t.Fatalf("concurrent first executes failed; not checking further")
	}
	return outs
}

func concurrencyShared(p *probe) {
	// Whether or not the provider declares lazy allocation, concurrent
	// first executes that allocate share the binding's one allocation.
	if alloc, ok := p.tg.Executes[RoleAllocation]; ok {
		p.sameAllocation(alloc)
	}
	role := RoleWrite
	d, ok := p.tg.Executes[role]
	if !ok {
		role, d = RoleEcho, p.descriptor(RoleEcho)
	}
	c := p.setup()
	p.teardownLater(c)
	p.concurrentFirst(ruleShared, c, d, role)
	if read, ok := p.tg.Executes[RoleRead]; ok && role == RoleWrite {
		if _, ex, _, err := p.tool(c, read); err != nil {
			p.fail(ruleShared, ex, "after concurrent first writes, a read on the same binding: %v", err)
		}
	}
}

func concurrencyIsolated(p *probe) {
	write, read := p.descriptor(RoleWrite), p.readDescriptor()
	a, b := p.setup(), p.setup()
	p.teardownLater(a)
	p.teardownLater(b)
	p.mustTool(a, write, "write on the first binding")
	p.mustTool(b, p.descriptor(RoleEcho), "echo on the second binding")
	out, ex, _, err := p.tool(b, read)
	if err == nil {
		p.fail(ruleIsolation, ex, "a read on a second binding observed the first binding's write: output %s passes the read check", excerpt(out, 300))
	}
	if _, ex, r, err := p.tool(a, read); err != nil {
		p.fail(r, ex, "a read on the binding that wrote: %v", err)
	}
	// A binding is its session's: another session's binding of the same
	// name is another binding.
	tw := p.twin(a)
	p.accepted(ruleIsolation, fmt.Sprintf("setup of binding %s/%s, of another session with the same environment name as the binding that wrote", tw.Session, tw.Environment), tw.Setup(p.tg.SetupConfiguration))
	p.teardownLater(tw)
	p.mustTool(tw, p.descriptor(RoleEcho), "echo on the other session's binding")
	if out, ex, _, err := p.tool(tw, read); err == nil {
		p.fail(ruleIsolation, ex, "a read on binding %s/%s observed the write on %s/%s, a binding of another session with the same environment name: output %s passes the read check", tw.Session, tw.Environment, a.Session, a.Environment, excerpt(out, 300))
	}
}

func lazyFirstUse(p *probe) {
	unused := p.setup()
	p.accepted(ruleShared, "teardown of a binding that never executed", unused.Teardown())

	if alloc, ok := p.tg.Executes[RoleAllocation]; ok {
		p.sameAllocation(alloc)
	}
	role := RoleWrite
	d, ok := p.tg.Executes[role]
	if !ok {
		role, d = RoleEcho, p.descriptor(RoleEcho)
	}
	c := p.setup()
	p.teardownLater(c)
	p.concurrentFirst(ruleShared, c, d, role)
	if read, ok := p.tg.Executes[RoleRead]; ok && role == RoleWrite {
		p.mustTool(c, read, "read after concurrent first writes")
	}
}

// sameAllocation runs concurrent first allocation calls on a fresh binding
// and fails the case unless they all name one allocation.
func (p *probe) sameAllocation(d Descriptor) {
	p.t.Helper()
	c := p.setup()
	p.teardownLater(c)
	outs := p.concurrentFirst(ruleShared, c, d, RoleAllocation)
	seen := map[string]int{}
	for _, out := range outs {
		seen[canonical(out)]++
	}
	if len(seen) != 1 {
		p.fail(ruleShared, nil, "%d concurrent first calls on one binding saw %d allocations, want 1 (allocation output: number of calls): %v", len(outs), len(seen), seen)
	}
}

// canonical is the compact JSON of raw, so that equal values compare equal.
func canonical(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	data, _ := json.Marshal(v)
	return string(data)
}
