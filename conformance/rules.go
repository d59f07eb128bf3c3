package conformance

// rule names the protocol sentence or reference section a check enforces;
// every failure message starts with one.
type rule string

// Sentences of the environment protocol (the product definition) and
// sections of the reference notes.
const (
	ruleAuth       rule = `"The service must authenticate requests." (environment protocol, Factory); the bearer check comes before routing (providers reference §1a)`
	ruleRoute      rule = `Brain posts to {url}/v1/operations (environment protocol, Factory); any other path is 404 (providers reference §1a)`
	ruleBodyLimit  rule = `a body over the provider's limit is answered 413 (providers reference §1a)`
	ruleStrict     rule = `commands are decoded strictly: JSON syntax, unknown fields, identifiers ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$ and sequences ≥ 1 are checked, a violation is 400 (providers reference §1a; brain reference §3.1)`
	ruleResponse   rule = `"The response carries the same contract and sequence and a receipt." (environment protocol, Operations)`
	ruleLifecycle  rule = `"Automatic session creation calls setup, ending calls detach, and deletion calls teardown." (environment protocol, Lifecycle and delivery)`
	ruleTeardown   rule = `teardown is repeatable and later operations on the binding fail with a failure receipt (providers reference §2, env-local; §3, lazy-environment)`
	ruleDuplicate  rule = `a second setup of the same binding is answered as the provider documents: already_exists or accepted (providers reference §3, lazy-environment; §2, env-modal)`
	ruleFinish     rule = `"For a Tool, result and returned end only the synchronous phase, optionally emitting output. Call the granted finish service to complete the Tool, either before returning or later." (environment protocol, Operations)`
	ruleFinishOnce rule = `"Finish orders after earlier admitted emissions and closes further emission authority." (environment protocol, Invocation services): a Tool finishes exactly once`
	ruleLostAck    rule = `"Use unknown only when dispatch may have happened but no reliable result is available." and "callbacks are not retried or replayed" (environment protocol, Operations; Lifecycle and delivery)`
	ruleGranted    rule = `"Only listed methods are granted." (environment protocol, Invocation services)`
	ruleTimeout    rule = `"For Tool invocations, return a failure with code timeout when its deadline expires" (environment protocol, Operations); the deadline stops the work (providers reference §5)`
	ruleCancel     rule = `"For Tool invocations, return a failure with code ... cancelled for explicit cancellation." (environment protocol, Operations)`
	ruleShared     rule = `"The lazy workspace example tests concurrent first allocation" (environment protocol, Lifecycle and delivery): concurrent first calls on one binding share one allocation (providers reference §3)`
	ruleIsolation  rule = `bindings are isolated: another binding cannot read the first's state (providers reference §2, env-local and env-browser)`
	ruleUnsupport  rule = `"Return an unsupported failure for an unsupported operation or descriptor." (environment protocol, Operations)`
	ruleFailure    rule = `"Failure fields code, message, retryable, and optional JSON details reach Tool results unchanged." (environment protocol, Operations; brain reference §3.3)`
	ruleReporter   rule = `"POST { type: "event", event_type, data } for diagnostics, or { type: "result", output: { observation, content? } } for actionable facts, to operation.reporter.url with its bearer token." (environment protocol, Controller services)`
	ruleLoss       rule = `"Report resource loss explicitly, without silently allocating replacements." (environment protocol, Lifecycle and delivery)`
	ruleTurnEnd    rule = `"Setup can return { type: "accepted", on_turn_end: "release" } ... Brain sends call { name: "release", input: { sequence } }" (environment protocol, Lifecycle and delivery)`
	ruleMethods    rule = `call {name, input} runs an environment-specific method (brain reference §3.2)`
	ruleExpect     rule = `Options.Expect: a capability the provider's CI pins must stay declared`
)
