package submit

import "syscall"

// masterAttr ties the SSH master connection to gym's life: it ends with
// gym however gym ends.
func masterAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
