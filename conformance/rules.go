package conformance

// rule is the protocol rule a check enforces, stated in full so that a
// failure explains itself; every failure message carries one.
type rule string

// The rules of environment/v1 the cases check.
const (
	ruleAuth         rule = `a provider authenticates every request with its bearer token ("Authorization: Bearer <token>"), before routing: a missing or wrong token, or another scheme, is answered 401 whatever the path, and the refused command has no effect`
	ruleRoute        rule = `Brain posts every command to {url}/v1/operations; an authenticated request to any other path is answered 404`
	ruleBodyLimit    rule = `a command body larger than the provider's limit is answered 413; one of exactly the limit is served`
	ruleStrict       rule = `commands are decoded strictly: malformed JSON (anything after the command's object included), unknown fields (names are case-sensitive: "Sequence" is not "sequence"), a name repeated in one object, a contract other than "environment/v1", a required field left out (session_id, environment, sequence, request, a cancel's target_sequence, a call's name), identifiers not matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$ and sequences (target_sequence included) that are not integers of at least 1 are answered 400`
	ruleRefused      rule = `a command answered 400 or 404 is refused before it is served: it has no effect (a refused setup leaves its binding not set up)`
	ruleResponse     rule = `every answer to a command is 200 with {"contract":"environment/v1","sequence":<the command's sequence>,"receipt":{...}}, the sequence of the command answered (a cancel's own, not its target_sequence), failures included (an execute's timeout and cancelled answers among them); a setup, cancel, detach or teardown is answered accepted, failure or unknown`
	ruleLifecycle    rule = `a binding's life is setup, then operations, then detach and teardown; each of these is answered with an accepted receipt when it succeeds`
	ruleTeardown     rule = `teardown is repeatable (a second teardown is accepted) and any later execute or call on the torn-down binding answers a failure receipt without running anything`
	ruleDuplicate    rule = `a second setup of a binding that is already set up answers failure already_exists, unless the provider documents (profile "duplicate_setup": "accepted") that it accepts it again`
	ruleFinish       rule = `an execute of a Tool answers result or returned, which end only its synchronous phase; the Tool completes when the provider calls the finish service of the execute's callback grant (before answering or later), with an ok outcome whose value is the Tool's output`
	ruleFinishOnce   rule = `a Tool finishes exactly once: finish is called once per execution and no emission (emit, result, returned) follows it`
	ruleLostAck      rule = `callbacks are never retried: when finish was sent but its acknowledgement was lost, the outcome may have been committed, so the execute answers unknown and finish is not sent again; a finish Brain answered with a server error is not sent again either`
	ruleGranted      rule = `an execution calls only the methods its callback grant lists`
	ruleTimeout      rule = `an execute whose deadline_ms passes answers failure timeout within the grace the profile allows after the deadline, and its work stops: it never completes ok afterwards. A Tool that answered returned before its deadline (its work going on in the background) is closed by Brain as timeout at the deadline; its work stops then just the same`
	ruleRemaining    rule = `deadline_ms is the time that remains, in milliseconds, not a timestamp: an execute whose work ends well within its deadline_ms completes as it would without one (a deadline_ms longer than a 32-bit millisecond timer holds, such as 3000000000, included), and timeout is answered only once deadline_ms has passed (within a timer's granularity of 10 ms)`
	ruleCancel       rule = `a cancel {target_sequence} of a running execute makes that execute answer failure cancelled, and its work stops: it never completes ok afterwards. A cancel of a Tool that answered returned and has not finished stops its work the same way (Brain closes it as cancelled). It stops only the execute it names (session, environment and target_sequence): other executes of the binding, and another session's execute at the same sequence, run on`
	ruleShared       rule = `concurrent first executes on one binding all succeed and share the binding's one allocation: the provider allocates once per binding, never once per caller`
	ruleIsolation    rule = `bindings are isolated: an execute on one binding never observes state written on another; a binding is named by its session and its environment together, so bindings of two sessions with the same environment name are two bindings`
	ruleUnsupport    rule = `an execute of a descriptor, or a call of a method, the provider does not support answers failure unsupported without running anything`
	ruleUnknownReq   rule = `a request of a type the provider does not know is refused: either 400 or a failure receipt with code unsupported; turn and invoke are not environment operations and are refused the same way`
	ruleFailure      rule = `a failure receipt is {"type":"failure","code":<identifier>,"message":<string of at most 4096 characters>,"retryable":<boolean>,"details"?:<JSON>} and nothing else; retryable is always present`
	ruleReporter     rule = `a provider posts observations to the binding's reporter grant ({type:"event",event_type,data} or {type:"result",output:{observation,content?}}) with the grant's bearer token, and Brain accepts them`
	ruleReporterOnce rule = `a reporter post is never retried: when an observation was posted but its acknowledgement was lost, Brain may have committed it, so it is not posted again`
	ruleLoss         rule = `a binding whose resource was lost (for example by a provider restart) reports the loss with a failure; it never allocates a replacement silently`
	ruleTurnEnd      rule = `a setup answering {"type":"accepted","on_turn_end":"<method>"} registers that method: after every turn Brain calls it with {"sequence":<turn_started>}, and it answers a non-failure receipt`
	ruleMethods      rule = `a call {name,input} of a method the provider declares runs it and answers a result receipt`
	ruleExpect       rule = `a capability the profile's "expect" list pins must stay declared`
	ruleOnce         rule = `an execute is run at most once: a command repeated with the same session, environment and sequence, after its answer or while it still runs, is not executed again; it answers unknown (or the first answer) and makes no further callbacks. Every session numbers its sequences from 1, so an execute of another session at the same sequence is another command and runs`
	ruleCallOnce     rule = `a call is run at most once: a call repeated with the same session, environment and sequence, after its answer or while it still runs, does not run its method again; it answers unknown (or the first answer), and the method's effects (its observations among them) are not applied again`
	ruleCancelOnce   rule = `a cancel is run at most once: a cancel repeated with the same session, environment and sequence is not run again; it answers unknown (or the first answer) and stops nothing, however far the provider's cancel reaches (an execute of the binding started since the first cancel runs on)`
	ruleSetupOnce    rule = `a setup is run at most once: a setup repeated with the same session, environment and sequence is that setup delivered again, not a new one, so a repeat that comes after the binding's teardown does not set the binding up again (an execute on it still answers a failure)`
	ruleNoDeadline   rule = `an execute without deadline_ms has no deadline: the provider sets no time limit of its own in its place, and work that runs for seconds completes ok as it would with a deadline far off`
	ruleEvidence     rule = `when the work of a stopped execute cannot be cleaned up, its failure keeps the first stop cause as its code (timeout when its deadline_ms passed, cancelled when a cancel named it) and the cleanup evidence in its details`
	ruleReturns      rule = `a provider answers every request, or stops serving it once the request's connection is gone: no request holds the provider forever`
	ruleReceipts     rule = `an execute may answer {"type":"accepted"} or {"type":"progress","data":<JSON>}; that leaves the Tool's outcome unknown, so the provider does not complete it afterwards: no finish, result or returned callback follows the answer`
)
