// Package fullfs gives tests a real file system they can fill: a small
// tmpfs mounted for the test (Linux, as root), and a filler file that takes
// every free byte until the test frees it again. Tests of what a full disk
// does to durable writes use it instead of fakes.
package fullfs
