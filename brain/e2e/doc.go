// Package e2e holds black-box tests of Brain, driven only through HTTP
// and the Go client. Most tests run the brain binary, which TestMain
// builds once (with the braintest_faults tag for crash tests), on a free
// loopback port over a temporary data directory. Tests of Brain with
// environment/v1 providers embed Brain in-process (braintest.Open)
// next to providers written with envsdk and recorded by envtest.Provider;
// their crash tests run Brain in a child process (this test binary
// re-executed). Crash tests kill the process with SIGKILL. Subtests are
// named after the acceptance cases they cover ("case08"...).
package e2e
