//go:build !linux

package fhirserver

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// sysProcAttr is empty where process groups and the parent-death signal are
// not set up this way; the server still exits when its stdin closes, and
// Close kills it.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills the process itself.
func signalGroup(cmd *exec.Cmd, _ syscall.Signal) error {
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
