package fhirserver

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the server in its own process group, so stopping it
// stops everything it started, and has the kernel kill it when its parent
// process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the process group that cmd leads.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}
