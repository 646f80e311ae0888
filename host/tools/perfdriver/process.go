package perfdriver

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Scheduler is a measured scheduler the driver starts itself
// (Options.StartScheduler), so that it knows the process to read the CPU
// time and peak RSS of, can start it at the moment a backlog is complete,
// and stops it before cleaning up.
type Scheduler interface {
	// PID is the scheduler's process on this machine.
	PID() int
	// Exited is closed when the process has ended; Err then says how.
	Exited() <-chan struct{}
	Err() error
	// Stop ends the process and waits for it.
	Stop() error
}

// StopGrace is how long Command.Stop waits after SIGTERM before it kills
// the scheduler: both schedulers stop in well under a second when asked.
const StopGrace = 10 * time.Second

// Command is a scheduler process started from a command line.
type Command struct {
	line   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // set before exited is closed
}

// StartCommand starts line with /bin/sh -c, its standard output and
// error going to out. The shell execs the command, so the process whose
// PID is measured is the scheduler itself and not a shell waiting for it:
// line must therefore be one program with its arguments (variables,
// quoting and redirections are fine; a pipeline or a list would measure
// the shell). The process gets its own process group, so a Ctrl-C meant
// for the driver reaches it only through Stop, and it is killed if the
// driver dies first.
func StartCommand(line string, out io.Writer) (*Command, error) {
	if strings.TrimSpace(line) == "" {
		return nil, errors.New("scheduler command: empty")
	}
	cmd := exec.Command("/bin/sh", "-c", "exec "+line)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start scheduler command %q: %w", line, err)
	}
	c := &Command{line: line, cmd: cmd, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exit status 0")
		}
		c.err = fmt.Errorf("scheduler command %q (pid %d) ended: %w", line, cmd.Process.Pid, err)
		close(c.exited)
	}()
	return c, nil
}

// PID implements Scheduler.
func (c *Command) PID() int { return c.cmd.Process.Pid }

// Exited implements Scheduler.
func (c *Command) Exited() <-chan struct{} { return c.exited }

// Err implements Scheduler: how the process ended (nil while it runs).
func (c *Command) Err() error {
	select {
	case <-c.exited:
		return c.err
	default:
		return nil
	}
}

// Stop implements Scheduler: SIGTERM to the process group, SIGKILL after
// StopGrace. A process running when it was asked stopped as asked,
// whatever its exit status; one that had already ended on its own
// returns how.
func (c *Command) Stop() error {
	select {
	case <-c.exited:
		return c.err
	default:
	}
	pgid := c.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(StopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.exited
	}
	return nil
}
