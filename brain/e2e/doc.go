// Package e2e holds black-box tests of the brain binary: TestMain builds it
// once, and each test starts it on a free loopback port with a temporary
// data directory and drives it only through HTTP and the Go client.
// Subtests are named after the acceptance cases they cover ("case08"...).
// Crash tests kill the process with SIGKILL.
package e2e
