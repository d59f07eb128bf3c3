// Package pgtest gives tests a real PostgreSQL: one server per test binary
// and a fresh, empty database per test.
//
// A test package calls Main from its TestMain. When the environment
// variable BRAIN_TEST_DATABASE_URL is set, the server it names is used
// (the URL's database is only used to create and drop the per-test
// databases; the role must be allowed to CREATE DATABASE). Otherwise Main
// starts a private PostgreSQL 15 in a temporary directory with the
// binaries of /usr/lib/postgresql/15/bin (or the directory named by
// BRAIN_POSTGRES_BIN): initdb, then pg_ctl start with a Unix socket in that
// directory and no TCP listener. PostgreSQL refuses to run as root, so
// under root the binaries run with the uid and gid of the postgres user
// and the directory is given to that user. Main stops the server and
// removes the directory when the tests end. The environment variable
// BRAIN_PGTEST_CONF, when set, is appended to the private server's
// postgresql.conf, e.g. to load pg_stat_statements or auto_explain while
// looking into a benchmark.
//
// When neither is possible (binaries missing, no postgres user), tests
// calling Database skip with the reason, or fail when
// BRAIN_REQUIRE_POSTGRES=1.
//
// A private server can be stopped and started again (Stop, Start) so that
// tests can cut the database away under load, or frozen (Freeze, Thaw:
// SIGSTOP and SIGCONT of all its processes) so that every statement hangs
// unanswered; tests that need that call Control, which skips when the
// server is not private.
package pgtest
