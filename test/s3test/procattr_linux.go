package s3test

import "syscall"

// sysProcAttr has the kernel kill the server when the test process dies,
// so a test binary killed by its time-out leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
