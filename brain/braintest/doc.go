// Package braintest runs a real Brain for tests outside the brain module's
// internals, such as examples, client and provider tests. Start embeds
// one in-process through brain.New on a free loopback port, with
// environment providers served next to it; Serve builds the brain binary
// and runs "brain serve" as a child process, for crash and signal tests.
// Both stop with the test.
package braintest
