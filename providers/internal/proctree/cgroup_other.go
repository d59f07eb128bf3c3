//go:build unix && !linux

package proctree

import (
	"context"
	"syscall"
)

// cgroup does not exist outside Linux; newCgroup always returns nil.
type cgroup struct{}

func newCgroup() *cgroup                    { return nil }
func (*cgroup) attach(*syscall.SysProcAttr) {}
func (*cgroup) started()                    {}
func (*cgroup) kill(context.Context) error  { return nil }
func (*cgroup) remove() error               { return nil }
