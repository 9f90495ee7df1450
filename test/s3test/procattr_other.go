//go:build !linux

package s3test

import "syscall"

// sysProcAttr is empty where the parent-death signal does not exist; the
// server is still stopped by the test's cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }
