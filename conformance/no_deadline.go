package conformance

// deadlineAbsent runs the sleep role without deadline_ms: nothing stops
// it, so it runs its natural time and completes ok. A provider that puts a
// default deadline of its own in place of the absent one answers timeout,
// or finishes the Tool with another status.
func deadlineAbsent(p *probe) {
	d := p.descriptor(RoleSleep)
	if d.Runs <= 0 {
		p.t.Skipf("the sleep descriptor gives no natural run time (Descriptor.Runs, profile \"runs_ms\")")
	}
	c := p.setup()
	p.teardownLater(c)
	if _, ex, _, err := p.toolCmd(c.Execute(d.Implementation, d.Input, nil), d); err != nil {
		p.fatal(ruleNoDeadline, ex, "a sleep of %v sent without deadline_ms: %v", d.Runs, err)
	}
}
