package test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var cli struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cli.dir != "" {
		os.RemoveAll(cli.dir)
	}
	os.Exit(code)
}

// carebridge runs the carebridge command (built once per test run) with
// DATABASE_URL set and returns what it printed on standard output and its
// exit code.
func carebridge(t *testing.T, dbURL string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(carebridgeBin(t), args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("carebridge %v: %v", args, err)
	}
	return string(out), 0
}

// carebridgeBin is the path of the carebridge command, built once per test
// run.
func carebridgeBin(t *testing.T) string {
	t.Helper()
	cli.once.Do(func() {
		if cli.dir, cli.err = os.MkdirTemp("", "carebridge-cli-"); cli.err != nil {
			return
		}
		cli.bin = filepath.Join(cli.dir, "carebridge")
		build := []string{"build", "-o", cli.bin}
		if raceEnabled {
			build = append(build, "-race")
		}
		out, err := exec.Command("go", append(build, "../cmd/carebridge")...).CombinedOutput()
		if err != nil {
			cli.err = errors.New(err.Error() + "\n" + string(out))
		}
	})
	if cli.err != nil {
		t.Fatalf("build carebridge: %v", cli.err)
	}
	return cli.bin
}
