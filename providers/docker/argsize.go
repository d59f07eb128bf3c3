package docker

import (
	"fmt"
	"strings"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// maxArgString is the longest argument or environment string ("NAME=value")
// the Linux kernel takes in an exec, in bytes without its NUL
// (MAX_ARG_STRLEN, 32 pages of 4 KiB).
const maxArgString = 128<<10 - 1

// checkArgSizes refuses, before anything runs, a command one of whose
// arguments or variables the kernel would refuse to exec (E2BIG): the
// caller's input is at fault, not the environment.
func checkArgSizes(in toolset.CommandInput, env []string) error {
	if len(in.Shell) > maxArgString {
		return tooLong("input.shell", "the shell line")
	}
	for i, a := range in.Argv {
		if len(a) > maxArgString {
			return tooLong("input.argv", fmt.Sprintf("argument %d", i))
		}
	}
	for _, kv := range env {
		if len(kv) > maxArgString {
			name, _, _ := strings.Cut(kv, "=")
			return tooLong("input.env."+name, fmt.Sprintf("variable %q", name))
		}
	}
	return nil
}

func tooLong(field, what string) error {
	return envsdk.Failf(envapi.CodeInvalidInput, "%s: %s is longer than the %d bytes a program can be given", field, what, maxArgString).
		WithDetails(map[string]string{"field": field})
}

// argsTooLarge reports whether the Engine's refusal to start an exec says
// that the kernel refused its arguments and environment (E2BIG).
func argsTooLarge(refusal string) bool {
	return strings.Contains(refusal, "argument list too long")
}

// errArgsTooLarge answers a command the kernel refused to start because its
// arguments and environment together are more than it takes.
func errArgsTooLarge(refusal string) error {
	return envsdk.Failf(envapi.CodeInvalidInput,
		"input: the command's arguments and environment are more than the kernel takes in all; nothing ran (%s)", refusal)
}
