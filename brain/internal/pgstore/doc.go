// Package pgstore keeps Brain's durable state in PostgreSQL so that several
// Brain nodes can share it: session journals, checkpoints, idempotency
// claims and answers, admitted agentloop and Tool modules, the sealing key's
// fingerprint, cluster membership and session leases. It is the only
// package that imports the PostgreSQL driver (pgx). PostgreSQL's
// transactions and unique keys are the only source of order and
// ownership; there is no other consensus.
//
// Open connects, applies the schema migrations, checks the sealing key and
// joins the membership. DB.Journal is a journal.Store (it passes
// journaltest); DB.Requests is an idem.Requests; DB.Secrets seals
// credentials; the package registers the "postgres" backend of brain.New.
//
// # Schema
//
// Migrations are numbered from 1 and applied in order at Open, each in its
// own transaction together with the version it reaches. Each transaction
// first takes a transaction advisory lock (key 0x627261696e6d6967), then
// reads the version, so that of nodes starting together one migrates and
// the others then find nothing to do. The lock is never held outside a
// transaction, so a node stopped while it migrates holds it only until
// the server ends its idle transaction (see Faults). A database
// whose brain_schema.version is above the binary's refuses Open with
// ErrSchemaNewer. Version 1 creates
//
//	brain_schema      (version)                     one row
//	brain_cluster     (key_fingerprint)             one row: HMAC-SHA256 of
//	                                                "brain sealing key fingerprint v1"
//	                                                under the sealing key
//	brain_sessions    (session_id PK, next_seq, last_ms, epoch)
//	brain_records     (session_id, sequence) PK, kind, recorded_at_ms,
//	                  data, origin, frame_bytes
//	brain_checkpoints (session_id PK, through, payload)
//	brain_requests    (scope, key) PK, digest, hinted, claim_id, instance,
//	                  status, body, claimed_at, at
//	brain_modules     (id PK = SHA-256 hex of bytes, bytes, admitted_at)
//	brain_nodes       (node_id PK, instance, public_url, joined_at, expires_at)
//	brain_leases      (session_id PK, node_id, epoch, expires_at)
//
// Version 2 adds
//
//	brain_secrets     (session_id, name) PK, sealed
//
// Version 3 adds
//
//	brain_tool_modules (id PK = SHA-256 hex of bytes, bytes, admitted_at)
//
// which holds admitted Tool modules as brain_modules holds agentloop
// modules (DB.Tools), apart so that an id admitted as one kind is never
// the other. Every node stores a module's bytes before answering its
// admission; a node that does not know an id reads the bytes, refuses
// them unless they hash to it (ErrModuleDamaged), and compiles them into
// its own local cache.
//
// Session ids, kinds, data and origins are bytea, stored byte for byte as
// given (data and origin NULL when absent), so ids sort bytewise as in
// FileStore. frame_bytes is the record's frame size in FileStore's
// format; Read's byte bound measures that size from the lengths of the
// row's own bytes, so a row whose frame_bytes was damaged to understate
// it never makes a page longer than the bound. Read takes a page and the session
// row's next_seq in one snapshot and stops the page before a row no
// append could have written, damaged or removed behind Brain's back: a
// record an append would refuse (no kind, data or origin that is no
// JSON), a sequence out of its place, or a page that ends before the
// head. The read that starts there answers journal.ErrDamaged (a
// *journal.DamagedError naming brain_records and the sequence), which
// also ends the session's subscriptions. A stored answer whose status
// is no HTTP status is refused the same way (idem.ErrDamaged), never
// replayed.
//
// # Appends
//
// An append is one statement: it moves the session row's next_seq only if
// it is the expected one (the compare-and-set; the first append inserts
// the row instead), numbers and stamps the records (recorded_at_ms zero
// becomes the statement's time, and never goes below the session's last)
// and inserts them.
//
// Group commit: the appends, idempotency claims and answers of one node
// that wait at the same moment go to the database as one pipelined batch,
// which PostgreSQL runs as one implicit transaction (one round trip, one
// commit and WAL flush for all). The appends to distinct existing
// sessions in a batch share one statement, in which every session keeps
// its own compare-and-set and fence and answers its own result row, so a
// session in conflict or fenced out fails alone. The statements of a
// batch take their row locks in key order. When the server refuses any
// statement of a batch, the transaction is rolled back and each statement
// is run again in a transaction of its own (those of distinct keys at
// once); when the connection fails
// during a batch, or the answer leaves the commit's outcome unknown (see
// Faults), nothing is run again and every write in it is
// ErrOutcomeUnknown. At most two
// batches run at once; a lone write runs at once in its own transaction.
// synchronous_commit stays on: nothing returns before its commit is
// flushed.
//
// After the commit, a notifier sends NOTIFY on channel
// brain_journal with payload "<hex session id> <last sequence>", batching
// sessions, in a transaction with synchronous_commit off. It is not part
// of the append because PostgreSQL holds a database-wide lock from
// queueing a notification until its transaction's commit is flushed, so a
// NOTIFY in every append would serialize all commits (measured: 0.08× the
// bare INSERT+COMMIT rate at 64 sessions, against about 0.5× without).
// Delete removes the session row first (waiting for an append in flight,
// making later ones fail), then its records and checkpoint, and notifies
// "<hex session id> 0" in the same transaction.
//
// # Claims that ride the journal
//
// A synchronous send's idempotency claim and answer are written by the
// journal appends that carry their private records (commits.ClaimKind,
// commits.AnswerKind; see package idem, "Claims that ride the
// journal"), not by writes of their own: Requests.ClaimRiding reads the
// key's row (replaying an answer, refusing a conflict, waiting for a
// live claim or answering ambiguous, as Claim does) and, when the key is
// free, claims it in this process only. The reads of the sends waiting
// at the same moment share one statement, which looks each key up by
// its primary key. The append that carries the
// claim record, the turn's first commit, inserts the claim row in its
// own statement, and only for a session whose compare-and-set and fence
// passed; the append that carries the answer record, the turn's end,
// writes the answer the same way (in the claim's row when both ride one
// append). The group commit's combined statement carries them, an append
// with rides going through it even alone. So the claim is durable
// exactly when the turn's first records are: a fenced or conflicting
// append commits neither, and the claim is released without a write (the
// key runs anew); a crash after that commit leaves the claim row without
// an answer under the dead process's instance: ambiguous on every node.
// The claim row is inserted without ON CONFLICT, so a node that claimed
// the key between the read and the append (another request under the
// same key) makes the whole statement fail, nothing committed
// (ErrUnavailable; the claim is released and the retry finds the other
// claim). When an append carrying a claim ends with ErrOutcomeUnknown,
// the claim may be durable: it is neither released nor answered by this
// process, so the key stays ambiguous unless a later append carrying it
// commits.
//
// With Options.Fenced, an append also needs this node's live lease on the
// session. The session row carries the epoch of the lease it was last
// taken under: AcquireLease raises the lease row's epoch and the session
// row's in one transaction (one round trip; the session row in a
// statement of its own, after the lease row's, so that it also finds a
// session row that a first append committed while the lease row waited
// for it), and an append's compare-and-set also requires
// the session row's epoch to be the node's and the lease row (read, not
// locked) to name this node with that epoch, unexpired. A takeover
// therefore waits for an append in flight to commit (the session row is
// locked by it), so the new owner's recovery reads that append; an append
// after a takeover finds another epoch and fails with ErrNotOwner (or
// with journal.ErrConflict when it read the lease row before the takeover
// committed; a retry after re-reading finds ErrNotOwner). The first
// append of a session, which has no session row yet, share-locks the
// lease row instead. A fenced Delete deletes the session row under the
// same two conditions, or nothing (ErrNotOwner), and with it, in the same
// transaction, the session's records, checkpoint and secrets, so a lease
// that runs out right after a delete leaves nothing of the session
// behind. So do a fenced WriteCheckpoint (share-locking the session row)
// and the fenced writes of secrets, Secrets.Put and DeleteAll
// (share-locking the lease row, then the session row if there is one),
// each writing nothing without them (ErrNotOwner; a DeleteAll that finds
// no secrets of the session has nothing to remove, and succeeds). A node that lost its lease can never
// commit, nor delete what the new owner runs, nor replace the new
// owner's checkpoint with its own older projection (or with that of a
// deleted session whose id was used again), nor replace or remove the
// credentials of a session another node created under the same id, so
// it never sends an effect whose *_started record it could not commit.
//
// A creation that stored secrets and then could not commit its first
// append, nor remove them (its lease ran out, or the node stopped),
// leaves secrets without a session. Each Fenced node, every three lease
// lengths, removes the secrets (512 sessions at most) of sessions that
// have no session row and whose lease ran out more than twice OpTimeout
// ago: it locks their lease rows (skipping those another transaction
// holds), so that no node takes the lease, stores a secret or commits a
// first append meanwhile, then deletes in a statement of its own, whose
// snapshot sees every append committed before the locks. An append sent
// under the lease before it ran out has ended long before, as no live
// node's statement runs that long, or still holds the lease row. So the
// secrets of a session that exists, or that a node holding a live lease
// is creating, are never removed.
//
// # Subscriptions
//
// Local appends are pushed to local subscriptions at once. Another node's
// commits arrive on a LISTENing connection as a wake-up, after which the
// records are read from brain_records: the notification carries no data.
// A listening connection that brought nothing for a third of the lease
// length is pinged, and replaced when it does not answer within a
// quarter of OpTimeout: it died without a word (a network that dropped
// it sends no reset), and would otherwise leave other nodes' commits to
// the polls below. So is one whose LISTEN got no answer within
// OpTimeout. A lost listening connection is replaced within a
// moment; the pause between attempts grows only while connecting or
// LISTEN fails, and is short again once a LISTEN was in place.
// A lost wake-up is made up by reading: every followed session after the
// listener reconnects, and every second the heads of all followed
// sessions are compared with what was pushed (a node that died between
// its commit and its NOTIFY); a followed session whose row is gone was
// deleted, and its subscriptions end as with the delete's wake-up. Each
// record is pushed once, in order; the
// backlog and lag rules are journal.Subscription's.
//
// # Leases and membership
//
// A lease row says which node runs a session's activations. AcquireLease
// takes it when it is free, expired or already this node's, always
// raising the epoch, with one conditional upsert: of nodes racing for an
// expired lease exactly one wins. RenewLease extends it only while it is
// live and unchanged; a node that cannot renew must stop the session at
// once (the local deadline, measured from before the request was sent,
// never outlasts the row's expires_at). A RenewLease that finds the
// lease row locked by another transaction does not wait for it: it
// tries again each fifteenth of the lease length and answers
// ErrNotOwner once the local deadline passed. ReleaseLease expires it at once
// for a graceful drain; Close expires every lease still held, 512 per
// statement in session order, then leaves the membership, each under its
// own budget of OpTimeout. An acquisition under way when Close begins
// (one waiting for a lease row another transaction keeps locked) is
// cancelled on the server rather than waited for, and answers
// ErrUnavailable wrapping ErrClosed. Times are the database's clock. Leases and
// membership are renewed (and given up at Close) over a pool of two
// connections of their own, so requests that wait on the database and
// take every connection of the main pool never cost the node its leases
// or its membership.
//
// DB is the session engine's session.Ownership: Own answers the held
// lease or takes one (of this node's acquisitions racing for a session,
// each raising the epoch, the node keeps the highest: the database's),
// Release forgets a passivated session's lease at once and gives it back
// in the background. With Options.KeepLeases
// (the backend of brain.New sets it) every held lease is renewed each
// third of the lease length, up to 512 leases per statement in the
// order of their sessions (so a node holding many sessions renews them
// in a few round trips, not one each), and one that the database refused to renew,
// or that ran out locally while renewals failed, is reported to the
// OnLeaseLost function (the engine's Lost, which stops the session at
// once). Route tells the HTTP layer where a session's write belongs: ""
// when this node holds the lease or just took it (the owner's had
// expired), or when the session does not exist (no lease is taken for
// it, so a creation under way keeps its own), else the live owner's
// public URL, to forward to; LeaseEpoch
// answers the live lease's epoch, against which any node checks an
// invocation token before forwarding its call. Each node renews
// its brain_nodes row every third of the lease length; a row past
// expires_at is a dead node. The row of a node id is one process's
// (instance): Open waits while another process's row of the same id is
// unexpired, and joins once it ran out (a node restarted under its id
// after it stopped without leaving), but refuses with ErrNodeIDInUse,
// naming the id, as soon as that row is renewed: two live processes
// under one id would take each other's leases (a lease row names the
// node, not the process) and membership. A heartbeat never takes the
// row of another process whose membership is live. A renewal of leases or of the membership
// that failed is tried again a fifteenth of the lease length later, not
// at the next third, so that a database restarted or unreachable for
// well under a lease length costs a healthy node neither its leases nor
// its membership. Ending stalled connections and sweeping orphaned
// secrets (see Faults) follow a heartbeat, within the time left before
// the next one. NodeGone waits for that of the node a write
// was forwarded to, so that the forwarding node gives up a write that a
// stopped or hung owner will never answer (500 ambiguous, retryable with
// the same Idempotency-Key: the owner may have carried it out)
// instead of holding its caller.
//
// # Metrics
//
// Options.OnDurable is called with the records of each append this node
// commits, before the append returns, and Options.OnCommit once per
// committed transaction that appended records, with their number and the
// transaction's time (the file journal's hooks of the same names, which
// the metrics read): each node reports what it committed. DB.Passivated
// counts the sessions no node holds a live lease on with one aggregate
// statement (the session rows less those with a live lease, in one
// snapshot), at most once per PassivatedEvery per node; every node
// answers the same number.
//
// # Faults
//
// A database URL that cannot be used is refused (ErrDatabaseURL) by an
// error that never quotes it, nor any part of its password; a URL whose
// host name holds an '@' (a password's unescaped '@', which ends the
// userinfo), or whose database name or a setting's name does, or (in a
// URL with no user name before its host) a setting's value (the rest of
// a user name or password after its unescaped '/', which ends the host
// part), is refused before any connection error could quote that name
// (an '@' of a setting's value is written %40). A '?' or '#' in a
// password is the password's, as for libpq. The driver's reason for refusing a URL is given without the
// parts of the URL it quotes.
//
// An operation that could not reach the database, or that the server
// refused for lack of resources, a shutdown or because it takes no
// writes (a standby after a failover, a database set read-only), fails
// with ErrUnavailable: nothing was committed. So does a write that got
// no connection of the pool before its deadline (every connection
// busy): each write takes its connection before it sends anything, so
// one that got none was never sent. A write whose connection failed
// after it was sent fails with ErrOutcomeUnknown: it may have committed,
// so the caller acknowledges nothing and re-reads the state before
// acting again. So
// does a write answered by an error that does not say its transaction
// was rolled back: 40003 statement_completion_unknown, 57P02
// crash_shutdown (the server ends every connection wherever it is, even
// after a commit was flushed), and any connection exception (class 08:
// PostgreSQL sends those only while a connection is set up, so one in
// answer to a statement comes from a connection pooler that lost its own
// connection to the server, perhaps after the commit). Both
// wrap journal.ErrOverloaded (HTTP 503 overloaded, retryable). Nothing
// sticks: the pool reconnects on the next operation. A connection that
// failed gives its place in the pool up at once rather than wait for
// the server to take its close, which a connection that died without a
// word (a network that dropped it sends no reset) never does: the next
// operation opens a new connection instead of waiting for a place. A
// connection idle for more than a second is checked before an operation
// uses it; one that does not answer within a quarter of OpTimeout died
// while idle, and the operation goes on over another or a new one.
// Every connection sets idle_in_transaction_session_timeout to OpTimeout
// (unless the database URL sets it): a transaction of this package never
// waits that long between its statements, so one that does belongs to a
// process that stopped in it (SIGSTOP, a hung host), and the server ends
// it rather than keep the session rows it locked from every node. Its statements
// then fail with ErrUnavailable when the process resumes.
//
// A process that stops in the middle of sending a statement or a
// pipelined batch (the group commit's) leaves the server waiting for the
// rest inside the batch's transaction, with the row locks its first
// statements took; no server timeout ends that wait. So every
// connection also sets lock_timeout to a quarter of OpTimeout (unless
// the database URL sets it): a statement that waits longer for a lock
// fails on the server, nothing of it committed (ErrUnavailable), and the
// other writes of its group commit, run again each on its own (those of
// distinct sessions and keys at once, so that another held row costs
// only its own writes a wait), commit; the one that waited is not run
// again, so it waits only once, nor are the writes of its key after it.
// Only the waits for the migration lock and for the notifications'
// queue are bounded by their operation's deadline instead. A renewal of
// leases does not wait for a lock at all: it skips a lease row another
// transaction holds (the lease stays held, is tried again with the next
// retry, and is reported lost only if it runs out meanwhile), so that a
// row a stopped process keeps locked costs the node that lease alone.
// A renewal of leases or of the membership waits on the database at
// most half the time left before what it renews runs out (or a quarter
// of OpTimeout if that is more, but never past that time): its
// connection may have died without a word (a network that dropped it
// sends no reset), so it is given up then, the upkeep pool's
// connections are closed, and the retry opens a new connection with
// time to spare.
// And each node, at every membership renewal, ends the connections
// named like its own (application_name, "brain" unless the database URL
// sets it) whose transaction has waited on its client, in the middle of
// a statement or batch, for more than twice OpTimeout: no live node
// waits that long (it gives the connection up after OpTimeout), so the
// sessions and keys a stopped process locked are free again, and its
// sessions are taken over once its leases run out.
//
// Another node awaits an unanswered idempotency claim for as long as the
// process instance named in its row is a live member. So a claim that
// this process stops running without committing its end (the claim's
// own commit was lost with its connection, its answer or release failed,
// or it was abandoned) is settled as soon as the database answers: its
// row is deleted when the request did not run (a retry runs it), or
// handed to no instance (an empty instance) when it ran (every node answers
// ambiguous). Both statements match the claim's id and an unanswered
// row only. Until then a claim of that key on this node first tries to
// settle it and answers ErrUnavailable when it cannot.
//
// A request's claimed_at and at are the database's clock (now()), and so
// is every judgement of an answer's age (a claim over an expired answer,
// the purge): nodes whose clocks differ never expire one another's
// answers early, and an answer's time is never before its claim's.
package pgstore
