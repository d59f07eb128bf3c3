// Package proctree runs a program in its own process group and kills the
// whole tree it grows, including descendants that trap SIGTERM, start a new
// session with setsid or re-parent themselves away from the leader.
//
// On Linux, when this process's cgroup v2 directory is writable and the
// kernel offers cgroup.kill (5.14 and later), the leader is started inside
// a fresh cgroup of its own (clone3 with CLONE_INTO_CGROUP), so every
// descendant is born in it and cannot leave it from user space without
// write access to another cgroup. A kill writes cgroup.kill and waits until
// the cgroup is empty. When Run returns, an empty cgroup that was never
// killed is kept for a later run (creating one costs more than a short
// command), any other is removed; the cgroups left by a process that
// died are killed and removed by ReapOrphans. This catches
// a process that forked, called setsid, forked again and exec'd with an
// empty environment after its parent exited.
//
// Independently of the cgroup, and alone where there is none, a tree is
// found by three marks, so that escaping one of them is not enough to
// survive a kill: the process group of the leader, the parent chain from
// any member, and a per-run marker variable in the environment that every
// descendant inherits. Without the cgroup, a process that leaves all three
// (new session, reparented away, empty environment) escapes. Every member
// found is sent SIGKILL and the scan repeats until none is left alive, so a
// process forking during the kill is caught on the next pass. Only
// processes started after the leader are considered, and only processes of
// the same owner can be read and signalled.
//
// The marker's value and the cgroup's name begin with the owner's pid and
// start time, so ReapOrphans can kill, in a later process, the runs of an
// owner that died before it could stop them, and leave those of live
// owners alone.
//
// The tree is also swept after the leader exits on its own: a background
// child left behind by a finished command is killed, so a run owns no
// processes once Run returns.
package proctree
