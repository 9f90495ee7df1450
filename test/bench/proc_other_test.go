//go:build !linux

package bench

import "syscall"

// sysProcAttr is empty where the parent-death signal does not exist; the
// server is still stopped by the bench's cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }
