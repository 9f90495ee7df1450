//go:build !linux

package clamdtest

import "syscall"

// sysProcAttr is empty where the parent-death signal does not exist; clamd
// is still killed by the test's cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }
