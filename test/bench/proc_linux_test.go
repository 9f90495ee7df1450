package bench

import "syscall"

// sysProcAttr has the kernel kill the service when the bench process dies,
// so a bench killed by its time-out leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
