// Package environments holds black-box tests of Brain with environment/v1
// providers over real loopback HTTP: Brain is assembled from its parts
// (brain.New over a temporary data directory, routing environments to
// the providers under test) and driven only through the session API,
// while providers written with envsdk record every operation they
// receive. Subtests are named after the acceptance cases they cover.
// Crash tests run Brain in a child process (this test binary re-executed)
// and kill it with SIGKILL.
package environments
