package clamdtest

import "syscall"

// sysProcAttr has the kernel kill clamd when the test process dies,
// so a test binary killed by its time-out leaves no clamd behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
