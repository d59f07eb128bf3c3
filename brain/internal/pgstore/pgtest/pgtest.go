package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultBin is where Debian installs the PostgreSQL 15 server binaries.
const DefaultBin = "/usr/lib/postgresql/15/bin"

var (
	mu       sync.Mutex
	adminURL string  // server to create databases on
	private  *Server // the server Main started, if any
	reason   string  // why there is no server
	counter  atomic.Int64
)

// Main runs the tests of a package with one PostgreSQL server (see the
// package comment) and answers the exit code: func TestMain(m
// *testing.M) { os.Exit(pgtest.Main(m)) }.
func Main(m *testing.M) int {
	if u := os.Getenv("BRAIN_TEST_DATABASE_URL"); u != "" {
		adminURL = u
		return m.Run()
	}
	bin := os.Getenv("BRAIN_POSTGRES_BIN")
	if bin == "" {
		bin = DefaultBin
	}
	s, err := start(bin)
	if err != nil {
		reason = err.Error()
		return m.Run()
	}
	private, adminURL = s, s.URL("postgres")
	code := m.Run()
	if err := s.destroy(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
	}
	return code
}

func required() bool { return os.Getenv("BRAIN_REQUIRE_POSTGRES") == "1" }

func unavailable(t testing.TB, why string) {
	t.Helper()
	if required() {
		t.Fatalf("PostgreSQL is required (BRAIN_REQUIRE_POSTGRES=1) but unavailable: %s", why)
	}
	t.Skipf("PostgreSQL unavailable (%s); install postgresql-15 or set BRAIN_TEST_DATABASE_URL; BRAIN_REQUIRE_POSTGRES=1 makes this a failure", why)
}

// Database creates a fresh, empty database for t, dropped when t ends, and
// answers its URL. It skips t (or fails it, see the package comment) when
// no server is available.
func Database(t testing.TB) string {
	t.Helper()
	if adminURL == "" {
		why := reason
		if why == "" {
			why = "pgtest.Main was not called from TestMain"
		}
		unavailable(t, why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("brain_test_%d_%d", os.Getpid(), counter.Add(1))
	if err := admin(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if private != nil && !private.Running() {
			return // a test stopped the server and left it so; it is removed anyway
		}
		if err := admin(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database: %v", err)
		}
	})
	return withDatabase(adminURL, name)
}

// Control answers the private server so that t can stop and start it,
// skipping t when the server is not private (BRAIN_TEST_DATABASE_URL).
func Control(t testing.TB) *Server {
	t.Helper()
	if private == nil {
		if adminURL == "" {
			unavailable(t, reason)
		}
		t.Skip("the server named by BRAIN_TEST_DATABASE_URL cannot be stopped by tests")
	}
	t.Cleanup(func() {
		if !private.Running() {
			if err := private.Start(); err != nil {
				t.Errorf("pgtest: restart: %v", err)
			}
		}
	})
	return private
}

func admin(ctx context.Context, sql string) error {
	mu.Lock()
	defer mu.Unlock()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func withDatabase(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// A keyword/value connection string.
		return raw + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

// Server is a private PostgreSQL server in a temporary directory.
type Server struct {
	bin     string
	dir     string // owned by the server's user
	asUser  *user.User
	running atomic.Bool
}

// URL answers the URL of database on the server (over its Unix socket).
func (s *Server) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@localhost/%s?host=%s&sslmode=disable", database, url.QueryEscape(s.dir))
}

// Running reports whether the server was started and not stopped.
func (s *Server) Running() bool { return s.running.Load() }

// Stop stops the server with pg_ctl stop -m immediate: every backend is
// killed at once and no checkpoint is taken, as in a crash; what was
// committed survives through the WAL.
func (s *Server) Stop() error {
	if err := s.run("pg_ctl", "stop", "-D", s.data(), "-m", "immediate", "-w"); err != nil {
		return err
	}
	s.running.Store(false)
	return nil
}

// Start starts the server again after Stop (it recovers from its WAL).
func (s *Server) Start() error {
	if err := s.run("pg_ctl", "start", "-D", s.data(), "-w", "-t", "60", "-l", filepath.Join(s.dir, "server.log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("%w\n%s", err, tail(log, 2000))
	}
	s.running.Store(true)
	return nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// Freeze stops every process of the server (the postmaster first, so
// that it forks no more, then its children) with SIGSTOP: connections stay
// open and every statement hangs unanswered, as on a stalled host, until
// Thaw resumes them with SIGCONT.
func (s *Server) Freeze() error { return s.signalAll(syscall.SIGSTOP) }

// Thaw resumes a server that Freeze stopped.
func (s *Server) Thaw() error { return s.signalAll(syscall.SIGCONT) }

func (s *Server) signalAll(sig syscall.Signal) error {
	b, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return fmt.Errorf("pgtest: postmaster.pid: %w", err)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("pgtest: signal the postmaster: %w", err)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	for _, p := range procs {
		child, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			syscall.Kill(child, sig)
		}
	}
	return nil
}

func start(bin string) (*Server, error) {
	for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("no %s in %s", b, bin)
		}
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, errors.New("running as root and there is no postgres user to run the server as")
		}
		s.asUser = u
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s.dir = dir
	if s.asUser != nil {
		uid, _ := strconv.Atoi(s.asUser.Uid)
		gid, _ := strconv.Atoi(s.asUser.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	conf := strings.Join([]string{
		"listen_addresses = ''",
		"unix_socket_directories = '" + dir + "'",
		"max_connections = 300",
		"shared_buffers = 128MB",
		"fsync = on",
		"synchronous_commit = on",
		"log_min_messages = warning",
		os.Getenv("BRAIN_PGTEST_CONF"),
		"",
	}, "\n")
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		f.Close()
	}
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) destroy() error {
	var err error
	if s.Running() {
		err = s.run("pg_ctl", "stop", "-D", s.data(), "-m", "fast", "-w")
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

// run runs one of the server's binaries, as the postgres user under root.
func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	if s.asUser != nil {
		uid, _ := strconv.ParseUint(s.asUser.Uid, 10, 32)
		gid, _ := strconv.ParseUint(s.asUser.Gid, 10, 32)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Env = append(os.Environ(), "HOME="+s.dir)
	}
	cmd.Dir = s.dir
	// The server must outlive nothing but this process group's tests; it
	// gets its own group so that a ^C to the tests does not kill it before
	// Main stops it.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(out, 2000))
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
