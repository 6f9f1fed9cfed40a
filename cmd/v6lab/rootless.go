package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"v6lab/internal/run/host"
)

// A user without root can still have a lab where the kernel allows
// unprivileged user namespaces: v6lab re-runs itself as root of a new user
// namespace with private mount and network namespaces (so the lab's named network
// namespaces and state live on a private /run). The lab then exists only
// for that run, and vanishes with it even if the process is killed.

// usernsEnv marks the re-run inside the user namespace.
const usernsEnv = "V6LAB_USERNS"

// rootless reports whether this process is the re-run in a user namespace.
func rootless() bool { return os.Getenv(usernsEnv) != "" }

// errNoUserNS is wrapped when the kernel refuses the user namespace.
var errNoUserNS = errors.New("the kernel does not allow this user a user namespace")

// reexecRootless runs this command again as root of a new user and mount
// namespace and returns its outcome. An error wrapping errNoUserNS means
// the namespace could not be made, and nothing ran.
func reexecRootless() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	c := exec.Command(exe, os.Args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), usernsEnv+"=1")
	c.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGINT,
	}
	code, err := host.RunChild(c, nil)
	switch {
	case errors.Is(err, host.ErrStart):
		return fmt.Errorf("%w (%v)", errNoUserNS, err)
	case err == nil && code != 0:
		return &exitError{code: code, err: errSilent}
	}
	return err
}

// errSilent ends a command whose child already said what went wrong.
var errSilent = errors.New("")

// privateRun gives the re-run its own /run, where the lab's namespaces are
// named (/run/netns) and its owner recorded (/run/v6lab).
func privateRun() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("rootless lab: private mounts: %w", err)
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("rootless lab: private /run: %w", err)
	}
	return nil
}
