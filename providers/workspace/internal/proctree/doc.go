// Package proctree runs a program in its own process group and kills the
// whole tree it grows, including descendants that trap SIGTERM, start a new
// session with setsid or re-parent themselves away from the leader.
//
// A tree is found on Linux by three independent marks, so that escaping one
// of them is not enough to survive a kill: the process group of the leader,
// the parent chain from any member, and a per-run marker variable in the
// environment that every descendant inherits. Every member found is sent
// SIGKILL and the scan repeats until none is left alive, so a process forking
// during the kill is caught on the next pass. Only processes started after
// the leader are considered, and only processes of the same owner can be
// read and signalled.
//
// The tree is also swept after the leader exits on its own: a background
// child left behind by a finished command is killed, so a run owns no
// processes once Run returns.
package proctree
