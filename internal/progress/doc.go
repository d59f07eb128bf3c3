// Package progress shows the progress of long work (preparing a project,
// creating a container, running a suite) on a command's stderr: on a
// terminal, one status line rewritten in place, with log lines written
// above it; elsewhere, one plain line per step. It uses the standard
// library only.
package progress
