// Package pythonuv is the uv-Python environment provider: an environment/v1
// provider that runs operator-selected Python projects, prepared with uv,
// as Tools.
//
// # Not a sandbox
//
// This provider is an OS-runtime helper, not a sandbox. The Python code it
// runs has the provider's user, file system, network and process
// credentials; the reduced environment and the process-tree kill are
// hygiene, not isolation. Run only projects you trust. When the code is
// not trusted, run this provider inside the Docker provider's isolation
// instead of on the host: build an image that holds uv, the interpreter
// and the projects already synced (uv sync --locked at build time), start
// `brain env python-uv` as that container's command with a read-only root
// file system, no added capabilities, an unprivileged user, memory, CPU and
// pid limits and a network limited to what the projects need, and point
// Brain at the container's published port. The operator also owns the
// package-network policy and the process credentials.
//
// # Configuration
//
// Everything that selects code is operator configuration (Config, loaded
// with LoadConfig or built by flags): the projects, each a directory with
// pyproject.toml and uv.lock, an optional setup module and the module to
// run; the uv executable; the interpreter request; the uv cache; output
// and stderr bounds; the default timeout; the environment allow-list (uv
// and Python see only the variables it names, plus UV_PYTHON, UV_CACHE_DIR
// and PYTHONIOENCODING=utf-8: the JSON on Python's standard streams is
// UTF-8 whatever the locale). Sessions only name a project. A binding's setup configuration must be {}
// (or null); anything else is invalid_configuration.
//
// # Executing
//
// An execute's implementation descriptor is
//
//	{"kind": "python_project", "name": "<project>"}
//
// A name the operator did not configure, or any other descriptor, is
// unsupported. The execute must carry a callback grant listing finish
// (no_callback otherwise); the result is finished through it once.
//
// The first execute of a project prepares its installation directory:
//
//	uv sync --locked --project DIR                       (interpreter and dependencies)
//	uv run --no-sync --project DIR python -m SETUP       (only when a setup module is configured)
//
// The setup module runs once per installation: the virtual environment
// records that it ran (.brain-setup), so a provider started again syncs the
// installation but does not run its setup again, while a virtual
// environment made afresh does. Its start is recorded there too
// (.brain-setup-started) before it runs, and removed once the provider saw
// it end: a provider started after one that was killed while a setup ran
// does not run that setup again, whose work may be done or half done, but
// answers preparation_failed naming the file to remove (or the virtual
// environment to make afresh) once the operator has checked the
// installation. (A virtual environment that takes no file, in a read-only
// image, records neither: its setup runs at each start.) One preparation per directory is shared by
// every concurrent caller and by every session. Its phases are logged and, when the execution's grant
// lists emit, emitted as "python_uv.preparation" events ({project, phase,
// status, elapsed_ms, exit_code}). A failed preparation stays failed: no
// request retries it, and every execute of that directory answers
// preparation_failed with the evidence of the one attempt (phase, exit
// status, stderr tail) until the operator changes that project's
// configuration (Provider.Reload) or restarts the provider. The project's
// pyproject.toml and uv.lock count as its configuration: a reload after
// either changed (a lock fixed, a dependency added) prepares the
// directory again, syncing it to the new lock, while a reload that changes
// nothing keeps the outcome, failed or not. Executes already running on
// an installation a reload forgets run on undisturbed: the preparation
// that replaces it syncs the directory only once they ended, and the
// executes that arrive meanwhile wait for it (its preparation timeout
// counts from then); a reload never waits, and other directories are
// not held up. A reload that replaces a
// preparation still running stops its sync (a hanging uv does not hold
// up the new configuration) but lets a setup module already running end,
// and no later preparation of that directory, after however many reloads,
// starts before it ended; the executes waiting for it are served by the
// preparation that replaces it. A preparation that passes its timeout (preparation_timeout_ms) fails
// like any other, its reason naming the timeout.
//
// # Bindings across restarts
//
// A binding holds nothing but its attachment. With a state directory
// (WithStateDir, --state) each attached binding is one file there
// ({"version": 1, "key": "<binding key>"}, named by a digest of the key),
// written whole and synced before its setup is answered and removed
// before its detach or teardown is answered, so that a provider killed
// and started again serves the bindings set up before, still refuses a
// second setup of them (already_exists) and still answers unavailable for
// those detached or torn down. A file there that is not such a record
// stops New with an error naming it. Without a state directory bindings
// are kept in memory: after a restart every binding set up before answers
// unavailable until Brain sets it up again.
//
// A prepared installation is final too. When its project directory or
// virtual environment (through a symbolic link, the directory the link
// reaches) was removed or replaced since it was prepared, every
// execute of that directory answers resource_lost, and each binding that
// meets the loss is told once through its reporter, as a resource
// observation ({"resource": "python_project:NAME", "code":
// "resource_lost"}), sent beside the answer so that a Brain slow to take
// it does not hold the answer past its deadline. The installation is not
// prepared again, which would
// silently replace it, until the operator changes the configuration
// (Provider.Reload forgets a lost preparation) or restarts the provider.
//
// Each execute then runs
//
//	uv run --no-sync --project DIR python -m MODULE
//
// in DIR, with the execute's input as JSON on stdin; stdout must be one
// JSON value, with nothing around it but JSON white space (space, tab,
// CR, LF), which becomes the result. A non-zero exit is execution_failed
// with the stderr tail in details; other stdout is invalid_output, whose
// message says what is wrong with it: bytes that are not UTF-8, NaN or
// Infinity (which Python's json module writes for such floats), an object
// naming a member twice (a dict holding both 1 and "1"), anything after the
// value, white space JSON does not allow (a form feed, a no-break space). Stdout beyond the cap is output_limit. The process and every
// process it starts are killed (SIGKILL) when the deadline passes
// (timeout; an execute without a deadline is bounded by
// default_timeout_ms, which its timeout names), when Brain cancels the
// execution (cancelled), when output passes the cap, and after the module
// exits, so children it left behind never outlive the invocation; the
// preparation's uv commands are run the same way. The tree is found as
// providers/internal/proctree finds it: a cgroup of its own where the
// kernel offers one, else the process group, the parent chain and the
// run's marker, so a child that starts a session of its own (setsid,
// start_new_session) is killed too. A process that cannot be killed is
// reported in details.cleanup_error next to the first cause (the stop, the
// exit status, the output that is not JSON); a module that answered a
// result but left such a process behind is answered cleanup_failed, its
// result in details.output.
// Every process carries BRAIN_PYTHON_UV_RUN, naming the provider that
// started it: a provider started after one that was killed (SIGKILL, a
// crash) kills what the killed one left running, where /proc is readable,
// so no invocation outlives its deadline by outliving its provider.
//
// uv and Python see only the variables of DefaultEnvAllow plus
// Config.EnvAllow (and BRAIN_PYTHON_UV_RUN), with UV_PYTHON_DOWNLOADS=never forced: the machine's
// interpreter is used, never a downloaded one. The provider's token
// (BRAIN_ENV_TOKEN) is withheld whatever the allow-list says.
//
// # Bindings
//
// Setup attaches a binding; detach and teardown release the session's
// attachment and never touch the shared installation, which the operator
// owns; while executes run on the binding they fail with busy. Executing
// on a binding that is not attached is unavailable. Once Close has begun
// every operation (setup, execute, detach, teardown) is unavailable and
// leaves the state directory as it is; see Close.
//
// # Serving
//
// Command implements
//
//	brain env python-uv --listen 127.0.0.1:8092 --config FILE (--token T | --no-auth)
//	                    [--max-answer-bytes N]
//
// New, Reload, Prepare and Close are the programmatic surface; serve a
// Provider with its Handler. An answer is bounded by the largest Brain
// takes (--max-answer-bytes, WithMaxAnswerBytes; set it to Brain's
// BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES when that is not the default): a
// result that would make a larger answer fails with output_limit rather
// than being refused by Brain, and the stderr tail and output excerpt of a
// failure are cut to fit it (stderr_truncated), so that the failure
// reaches Brain with its evidence. A bound below MinAnswerBytes (1 KiB),
// too small to hold a failure's answer, stops New and Command.
package pythonuv
