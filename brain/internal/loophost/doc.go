// Package loophost runs agentloops and Tools compiled to WebAssembly: it
// is the Wasm half of the built-in "brain" environment and the only
// package of Brain that imports wazero.
//
// # Lifecycle
//
// A module is validated and compiled once, at admission (Host.Admit, or
// Host.Open for the modules already stored), into wazero's on-disk
// compilation cache under <agentloops dir>/cache, and the compiled module
// is kept in memory keyed by the SHA-256 of its bytes. What is compiled
// has its data segments merged: a Go guest's linker writes its initial
// memory as tens of thousands of segments of a few bytes, and an instance
// evaluates and copies each one on its own. Across gaps of under 1 KiB
// they become a handful that leave linear memory byte for byte as the
// originals do; a module whose segments are not all active, constant,
// within the initial memory and disjoint, or that has a data count
// section, is compiled as it is (dataseg.go). The maxima of its tables
// are lowered, when they sum to more than 2^20 entries (each entry costs
// an instance eight bytes of the host's memory), to their initial sizes
// plus an even share of what those leave of 2^20, so that a table.grow
// past them fails as a memory.grow past the linear memory limit does
// (tables.go). The id and the stored bytes are always the module as
// given. Before compiling, a module that declares more entries, names,
// segment bytes or elements than it has bytes for (the "name" section
// included), more than 50,000 locals in a function, tables of more than
// 2^20 entries in all, element segments of more than 2^20 elements in
// all, more than 100,000 globals, imports or exports, more than 1,000,000
// functions or function types, or (once its active
// segments are merged) more than 100,000 data segments, is refused as invalid
// (counts.go): the compiler and each instance size their allocations by
// what a module declares. So is a module whose functions hold too many
// blocks, loops and ifs: the compiler's time grows with the square of
// their number in a function, so the squares of each function's count
// may sum to at most 200,000,000 (controls.go; a Go module weighs a few
// million), and an admission, which every other one waits for, ends in
// seconds. A caller waits for it only as long as its context lasts
// (Host.Admit, Host.Find and the others answer the context's error; a
// Tool's execute fails with timeout or cancelled), and not at all once
// Host.Close has begun. A lookup of a module by id (Host.Func,
// Host.Resolve, a Tool's placement at session create) waits besides at
// most 30 seconds, then fails with overloaded (retryable, wrapping
// ErrBusy): the session's create or turn may be tried again. A module that compiles but of which no instance
// could be created is refused as well: one that imports a table, a global
// or a tag (the host modules export functions only), one with an
// active data segment, at a constant offset, that does not lie within its
// memory's initial size (compile.go), or one with an active element
// segment that does not lie within its table's initial size, which the
// runtime would skip with every segment after it instead of failing
// (elements.go). Admitted bytes are
// stored as <agentloops dir>/<sha256 hex>.wasm (written to a temporary
// file, synced and renamed); a rejection is remembered as
// <sha256 hex>.rejected (the AgentloopAdmission JSON and "judged", the
// linear memory limit and host functions it was judged under) so that GET
// answers it after a restart; under other terms the note is not taken and
// the next admission judges the bytes anew. A module that cannot be
// stored, or compiled into or read from the compilation cache (a full
// disk), is not judged (ErrStorage, which the API answers 503): nothing is
// remembered of it. A stored module that Open cannot compile for such a
// failure is compiled again whenever it is next named (Host.Find,
// Host.Resolve, a Tool's placement or run), answering ErrStorage while the
// failure lasts, so that it is not lost until admitted again. Nor is a
// module judged by an entry of the compilation cache that cannot be
// decoded (damaged on disk): the runtime's entries are discarded and the
// module compiled anew; an entry that is not a regular file (a named pipe
// would hold a compilation for ever) is removed at Open (cache.go). The
// cache directory itself is trusted, as the runtime reads it: what is put
// there while the host runs, by one who may write it, is not checked. A
// stored module whose bytes do not hash to its name, or whose file is not
// a regular file (a named pipe would hold Open for ever), is answered
// rejected, saying so, and never compiled; admitting its genuine bytes
// judges them and replaces the file. A stored module longer than
// Options.MaxModuleBytes (admitted before the operator lowered it) is not
// read: it is answered rejected, naming the limit, until a host opened
// with a limit that allows it loads it again. A remembered rejection that
// is not a regular file, or longer than 1 MiB, is ignored as a damaged
// one. With
// Options.Shared (a cluster's database) admitted
// agentloop bytes are stored there too, before the admission is answered,
// and a module another node admitted is fetched from there the first time
// it is named here (Host.Find, Host.Resolve), checked against its id,
// compiled and stored locally; bytes that do not hash to the id are
// refused (ErrDamaged). Options.SharedTools does the same for Tool modules
// (Host.FindTool, and any placement or run of a Tool), in a store of its
// own. Host.Resolve maps a session's implementation
// {"type":"brain_component","entrypoint":"turn","id":<sha256 hex>} to an
// agentloop.Func; {"type":"brain_builtin","name":"default"} maps to the
// embedded Wasm build of the default loop when Options.BuiltinWasm is set
// and to the native agentloop.Default otherwise.
//
// Every activation instantiates a fresh instance of the compiled module
// (guest memory never survives an activation), runs turn once and closes
// the instance. The runtime closes an instance whose activation context
// ends (wazero's WithCloseOnContextDone), so cancellation and turn
// deadlines stop a spinning guest. The check that makes this possible runs
// at every loop header of the guest and leaves the native code each time;
// a Go guest has one per iteration and per call of most functions, so
// guest code is much slower than natively and the Go guest SDK keeps
// reflection off the turn path. Nothing is compiled on the turn path
// (Host.Compiles counts compilations). Linear memory is bounded by
// Options.MaxLinearMemoryBytes (default 128 MiB). The call stack is
// apart from it: wazero grows it to at most about 80 MiB per instance
// (120 MiB while it is copied to grow), and a guest that recurses deeper
// traps with "stack overflow". On Unix an instance's linear memory is an
// anonymous mapping that reserves the limit, so growing never copies and
// untouched pages cost nothing. When the activation ends, every byte the guest was given
// is zeroed and the mapping is kept for the next instance (at most 16
// mappings, of at most 16 MiB used; clearing is several times cheaper
// than faulting fresh pages in), or it is unmapped. The guest's
// stdout and stderr are captured up to
// Options.MaxOutputBytes each; the head of stderr is added to the error of
// a failed activation and both go to Options.Output.
//
// # ABI
//
// A guest is a core WebAssembly module (not a component) using WASI
// preview 1, in the binary format; a component, or a module in the text
// format, is rejected with a message saying so (format.go). It must
// export:
//
//	memory                           its linear memory
//	brain_alloc(size i32) -> i32     a buffer of at least size bytes that
//	                                 stays valid until turn returns
//	turn(ptr i32, len i32) -> i64    run one activation
//	_initialize() -> ()              optional; run once at instantiation
//
// A module that exports _start without _initialize is a command, not a
// reactor, and is rejected (Go: build with -buildmode=c-shared). It may
// import any function of wasi_snapshot_preview1 that wazero provides and
// these functions of the host module "brain":
//
//	model(ptr i32, len i32) -> i64
//	dispatch(ptr i32, len i32) -> i64
//	emit(ptr i32, len i32) -> i64
//	telemetry(ptr i32, len i32) -> i64
//	events(ptr i32, len i32) -> i64
//	set_transcript(ptr i32, len i32) -> i64
//	kv_read(ptr i32, len i32) -> i64
//	kv_put(ptr i32, len i32) -> i64
//	kv_delete(ptr i32, len i32) -> i64
//	environments(ptr i32, len i32) -> i64
//	answer(ptr i32, len i32) -> i32
//
// One activation is, byte for byte:
//
//  1. The host instantiates the module (running _initialize if exported),
//     encodes the TurnInput as UTF-8 JSON (brain/api.TurnInput: input?,
//     transcript, kv, events, configuration, system, tools, runtime), calls
//     brain_alloc(n) with its length n, writes the n bytes at the answered
//     pointer and calls turn(ptr, n).
//  2. During turn the guest calls services. A service function reads its
//     input as the JSON at ptr/len in guest memory, the same input as the
//     "input" of the callback API's ExecutionCall for that method: model a
//     ModelRequest; dispatch an array of ToolInvocation; emit
//     {"event_type","data"}; telemetry any JSON; events a cursor number;
//     set_transcript an array of Message; kv_read and kv_delete a key
//     string; kv_put {"key","value"}; environments an
//     EnvironmentControlRequest. An empty input reads as null.
//  3. The service answers r (i64) = status<<32 | n. Status 0 means success
//     and the n answer bytes are the callback API's output: a ModelResult,
//     an array of ToolReturn in call order, a committed sequence as a bare
//     JSON number (emit, set_transcript, kv_put, kv_delete), null
//     (telemetry), an EventPage, {} for an absent key and {"value":...}
//     for a present one (kv_read, a stored null included), or the control
//     result (environments). Status 1 means failure and the answer is
//     {"code":string,"message":string,"retryable"?:bool,"details"?:any,
//     "ref":uint32} with the API error code of the failure (not_granted,
//     emit_limit, model_call_limit, invalid_request, ...). Other status
//     values are reserved.
//  4. The guest fetches the answer with answer(ptr, n): the host copies
//     min(n, pending) bytes of the pending answer to ptr, forgets it and
//     answers the count. A service call replaces an unfetched answer.
//  5. turn answers r (i64) = ptr<<32 | len of a UTF-8 JSON object in guest
//     memory: {"result"?:any} (TurnOutput) when the activation succeeds, or
//     {"error":{"message":string,"ref"?:uint32}} when it fails (of the
//     message, the first 4096 bytes are recorded, cut between
//     characters; the Go SDKs send no more). With the
//     ref of a failed service call the activation fails with that service
//     call's error (so it is recorded with the same failure code as for a
//     native loop); otherwise it fails with agentloop_failed. Only the
//     latest 1024 failed service calls of an activation are kept for
//     their refs (a guest that retries a refused call until its deadline
//     holds no more): an older ref counts as none. Any other
//     member, invalid JSON, JSON that is not an object (null included),
//     bytes that are not UTF-8, an answer over 32 MiB or a pointer
//     outside memory fail the activation.
//  6. The host closes the instance. A trap, proc_exit or a panic of the
//     guest fails the activation with the head of its stderr.
//
// Package brain/agentloop implements the guest side for Go: a program
// calls agentloop.Export(loop) from an init function and is built with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; the loop runs
// against the same agentloop.Services interface as a native loop.
//
// # Tools
//
// Tool modules are admitted like agentloops (Host.AdmitTool, POST
// /v1/tools) into Options.ToolsDir (<data dir>/tools), with the same
// layout, the same compilation cache and the same rules, and are kept
// apart from agentloop modules: each kind is rejected as the other. A Tool
// module has the agentloop ABI with these differences:
//
//   - It exports run(ptr i32, len i32) -> i64 instead of turn.
//   - It may import, from the host module "brain", answer and the Tool
//     services only: emit, result, returned, finish, model, environments,
//     telemetry (result takes an Outcome, returned and finish an Outcome or
//     null; each answers the committed sequence). An agentloop may not
//     import result, returned or finish, nor a Tool dispatch, events,
//     set_transcript or the kv functions.
//   - The input is {"input":any,"configuration":any,"deadline_at_ms":int}
//     (the tool input, the environment's configuration, the absolute
//     deadline in Unix milliseconds or 0), and run answers
//     {"outcome":ToolOutput} or {"error":{"message":string,"ref"?:uint32}}.
//     An outcome finishes the call (unless the Tool finished it already);
//     an error fails it with tool_error, or with the code of the failed
//     service call its ref names.
//
// Environments is the built-in environment in front of the operator's
// environments: it runs each execute of a
// {"type":"brain_component","entrypoint":"run","id":...} Tool placed on a
// brain environment in a fresh instance (Host.RunTool). The instance is
// closed when the Tool's deadline passes (failure timeout) or the call is
// cancelled (failure cancelled); a trap, proc_exit, a panic or exhausted
// linear memory fails with tool_error; an answer over
// Options.MaxToolOutputBytes with output_limit, and a run answer that is
// not UTF-8 with invalid_output. Package brain/tool is the
// Go guest SDK.
//
// Grants (ToolImplementation) are WASI preopens through an os.Root, so
// that neither ".." nor a symbolic link leads outside a granted
// directory, a guest cannot create links and opens regular files and
// directories only (a named pipe or a device could hold it in the host
// past its deadline): a workspace at /workspace
// (read-only unless granted write) inside Options.FilesystemAllow, a
// scratch directory at /scratch (a fresh one per invocation, removed
// after it) when FilesystemAllow holds "scratch", and each secret of
// Options.SecretAllow read-only at /secrets/<name>. The contents of the
// regular files under a granted secret's directory (each of at most 64
// KiB, 1024 files in all; as written and without the white space around
// them; a file of white space only is none) are removed, replaced by
// "[redacted]" as envbind removes an environment's credential, from all
// the host records or hands on of the invocation: its outcome (every JSON
// string), its error's message, the stderr head of its failure, its
// captured stdout and stderr (Options.Output) and the input of each of its
// service calls (events, results, telemetry, model requests). A secret a
// bound cuts (the error message the guest SDK clips, the stderr head, a
// capture) is removed before the cut, and an end of what is kept that
// begins a secret (four bytes of it or more) is removed too. An invocation holds
// at most 256 files and directories of its grants open at once (each is
// a file descriptor of the server's process): one more open fails with
// EMFILE and opens nothing (openfiles.go). A scratch directory
// holds at most Options.MaxScratchBytes (BRAIN_MAX_SCRATCH_BYTES, default
// 64 MiB) in all, each of its files and directories counting 4096 bytes
// (one block) besides the bytes of the files, so that empty entries
// cannot exhaust the inodes of the host's file system: a write, pwrite,
// truncate or allocate that would grow it past the budget fails with
// ENOSPC and writes nothing, and so does the creation of a file
// (path_open) or a directory, creating nothing (scratch.go; wazero's
// file system answers EIO for an errno it lacks, so wasi.go answers
// ENOSPC for those functions when the budget refused them). Growth is
// counted in apparent size (a hole counts as written); a directory's
// 4096 bytes come back when it is removed, a file's bytes and 4096 when
// it is removed or replaced by a rename and no open file holds it, and
// its bytes when it shrinks. A workspace is not bounded. Everything is denied
// by default; WASI preview 1 has no sockets, so there is no network.
// There is no fuel: a spinning guest is stopped by its deadline. A Tool
// reads the real clock and gets unpredictable random bytes. A loop's
// random bytes come from its activation's deterministic_seed and its clock
// is wazero's deterministic one (2022-01-01T00:00:00Z at instantiation,
// a millisecond more at each reading): the time it acts on is
// logical_time_ms (runtime in TurnInput), and its sleeps return at once. A Tool's sleep
// waits in the host, for its time or until the invocation's deadline or
// a cancel, whichever comes first (returning at once, the guest's
// scheduler would spin on the real clock until the time had passed).
//
// # Instances
//
// Agentloop activations and Tool invocations share Options.MaxInstances
// slots (BRAIN_MAX_CORE_INSTANCES, default 8). When every slot is taken
// one more fails at once with code overloaded (retryable) and never
// waits. Once Host.Close has begun nothing more runs: a Tool's execute
// fails with unavailable (retryable), as a provider that is stopping
// answers, and an agentloop activation with overloaded (retryable), as
// do one that Close stops while it runs and naming an agentloop module
// (Host.Func, Host.Resolve) or placing a Tool module at session create;
// a Tool that Close stops answers cancelled.
package loophost
