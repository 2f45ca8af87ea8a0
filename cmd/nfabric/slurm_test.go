package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slurmInstall is how to get what TestSlurmArrayFromDocs needs.
const slurmInstall = "apt-get install -y slurm-wlm munge"

// docBlock returns the fenced code block that follows the marker
// "<!-- slurm:NAME ... -->" in doc.
func docBlock(t *testing.T, doc, name string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)<!-- slurm:" + name + `\b[^>]*-->\s*` + "```" + `sh\n(.*?)` + "```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/running.md has no sh block after <!-- slurm:%s -->", name)
	}
	return m[1]
}

// setLine replaces the block's first line, which must match pattern (the
// line of settings the test substitutes), with line.
func setLine(t *testing.T, block, pattern, line string) string {
	t.Helper()
	first, rest, _ := strings.Cut(block, "\n")
	if !regexp.MustCompile(pattern).MatchString(first) {
		t.Fatalf("the block's first line %q no longer matches %s: update the test with the doc", first, pattern)
	}
	return line + "\n" + rest
}

// TestSlurmArrayFromDocs runs docs/running.md's Slurm example, its three
// blocks as the document writes them, on a one-node Slurm cluster started
// here (munged, slurmctld and slurmd as root, configured in a temporary
// directory, torn down at the end): 4 array tasks of a small --only
// selection and the dependent merge, whose out/ must equal a single run's
// byte for byte. One task is made to fail (a wrapper fails shard 2 while a
// marker file exists, as a broken node would): the merge must then never
// start, and after the doc's resubmission of that task alone it must
// succeed with the same bytes. Only the blocks' first lines (the shard
// count, the flags, the failed index) are the test's.
func TestSlurmArrayFromDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	for _, tool := range []string{"munged", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel", "sinfo"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("NFABRIC_REQUIRE_SLURM") != "" {
				t.Fatalf("%s not found and NFABRIC_REQUIRE_SLURM is set (install: %s)", tool, slurmInstall)
			}
			t.Skipf("skipped: %s not found: install Slurm with %s (root)", tool, slurmInstall)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: the one-node cluster runs slurmd as root; run the test as root")
	}
	doc, err := os.ReadFile("../../docs/running.md")
	if err != nil {
		t.Fatal(err)
	}
	script, submit, resubmit := docBlock(t, string(doc), "script"), docBlock(t, string(doc), "submit"), docBlock(t, string(doc), "resubmit")
	work := t.TempDir()
	c := startSlurm(t)
	c.work = work
	bin := buildNfabric(t)
	const only, n = "payload,functional,collective", 4
	flags := fmt.Sprintf("--only %s --seed 1", only)
	single := filepath.Join(work, "single")
	if out, err := exec.Command(bin, "reproduce", "--only", only, "--seed", "1", "--out", single).CombinedOutput(); err != nil {
		t.Fatalf("single run: %v\n%s", err, out)
	}
	// nfabric on the jobs' PATH: a wrapper that fails shard 2 while the
	// marker exists.
	binDir := filepath.Join(work, "bin")
	marker := filepath.Join(work, "fail-shard-2")
	wrapper := fmt.Sprintf("#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 2 ] && [ -e %s ]; then echo 'shard 2: node failure' >&2; exit 1; fi\nexec %s \"$@\"\n", marker, bin)
	os.MkdirAll(binDir, 0o755)
	if err := os.WriteFile(filepath.Join(binDir, "nfabric"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "reproduce.sbatch"), []byte(script), 0o755)
	os.WriteFile(marker, nil, 0o644)
	env := append(os.Environ(), "SLURM_CONF="+c.conf, "PATH="+binDir+":"+os.Getenv("PATH"))
	settings := fmt.Sprintf("n=%d; flags=%q", n, flags)
	ids := c.shell(t, work, env, setLine(t, submit, `^n=\d+; flags=".*"$`, settings)+"echo \"jid=$jid merge=$merge\"\n")
	jid, merge := ids["jid"], ids["merge"]
	c.waitState(t, merge, "PENDING", "DependencyNeverSatisfied")
	if st := c.jobField(t, jid+"_2", "JobState"); st != "FAILED" {
		t.Fatalf("array task 2 is %s, want FAILED", st)
	}
	os.Remove(marker)
	re := settings + "; merge=" + merge + "\n" + setLine(t, resubmit, `^task=\d+\b`, "task=2")
	merge = c.shell(t, work, env, re+"echo \"merge=$merge\"\n")["merge"]
	c.waitState(t, merge, "COMPLETED", "")
	compareDirs(t, single, filepath.Join(work, "out"))
	log, _ := os.ReadFile(filepath.Join(work, "slurm-"+merge+".out"))
	t.Logf("merge job %s's log:\n%s", merge, log)
	if got := strings.Count(string(log), "estimated"); got != n {
		t.Errorf("the merge's log has %d shard estimate lines, want %d:\n%s", got, n, log)
	}
}

// compareDirs fails unless every file of want is in got with the same
// bytes and got has no other files.
func compareDirs(t *testing.T, want, got string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(want, "*"))
	gotFiles, _ := filepath.Glob(filepath.Join(got, "*"))
	if len(files) < 6 || len(gotFiles) != len(files) {
		t.Fatalf("the single run wrote %d files, the merge %d", len(files), len(gotFiles))
	}
	for _, f := range files {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(got, filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the Slurm merge differs from the single run (%v)", filepath.Base(f), err)
		}
	}
}

// slurmCluster is a one-node cluster of this machine; jobs' output
// files go to work.
type slurmCluster struct {
	dir, conf, work string
	procs           []*exec.Cmd
}

// startSlurm writes a munge key and a minimal slurm.conf into a temporary
// directory, starts munged, slurmctld and slurmd in the foreground and
// waits for the node to be idle; the test's cleanup stops them. The node
// claims 32 CPUs (SlurmdParameters=config_overrides), so that the doc's
// --cpus-per-task=8 is accepted as written on a small machine.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "nfabric-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &slurmCluster{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	t.Cleanup(func() { c.stop(t) })
	for _, d := range []string{"munge", "state", "spool", "log"} {
		os.Mkdir(filepath.Join(dir, d), 0o700)
	}
	key := make([]byte, 1024)
	rand.Read(key)
	os.WriteFile(filepath.Join(dir, "munge", "munge.key"), key, 0o600)
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	os.WriteFile(c.conf, []byte(slurmConf(dir, host, freePort(t), freePort(t))), 0o644)
	sock := filepath.Join(dir, "munge", "munge.socket")
	c.start(t, "munged", "-F", "-f", "--num-threads=10", "--socket="+sock, "--key-file="+filepath.Join(dir, "munge", "munge.key"),
		"--log-file="+filepath.Join(dir, "log", "munged.log"), "--pid-file="+filepath.Join(dir, "munge", "munged.pid"), "--seed-file="+filepath.Join(dir, "munge", "seed"))
	waitFor(t, 20*time.Second, "munged's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	c.start(t, "slurmctld", "-D", "-i", "-f", c.conf)
	c.start(t, "slurmd", "-D", "-f", c.conf, "-N", host)
	waitFor(t, 60*time.Second, "the node to be idle", func() bool {
		out, _ := c.cmd("sinfo", "-h", "-o", "%t").Output()
		return strings.TrimSpace(string(out)) == "idle"
	})
	return c
}

func slurmConf(dir, host string, ctld, d int) string {
	return fmt.Sprintf(`ClusterName=nfabricci
SlurmctldHost=%[2]s(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[1]s/munge/munge.socket
SlurmctldPort=%[3]d
SlurmdPort=%[4]d
StateSaveLocation=%[1]s/state
SlurmdSpoolDir=%[1]s/spool
SlurmctldPidFile=%[1]s/slurmctld.pid
SlurmdPidFile=%[1]s/slurmd.pid
SlurmctldLogFile=%[1]s/log/slurmctld.log
SlurmdLogFile=%[1]s/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
NodeName=%[2]s NodeAddr=127.0.0.1 CPUs=32 State=UNKNOWN
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, dir, host, ctld, d)
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (c *slurmCluster) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
	return cmd
}

// start runs a daemon in the foreground, its output in the log directory.
func (c *slurmCluster) start(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := c.cmd(name, args...)
	f, err := os.Create(filepath.Join(c.dir, "log", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c.procs = append(c.procs, cmd)
}

// stop shuts the cluster down, daemons in reverse order, and removes its
// directory; on failure it first prints the daemons' logs.
func (c *slurmCluster) stop(t *testing.T) {
	if t.Failed() {
		logs, _ := filepath.Glob(filepath.Join(c.dir, "log", "*"))
		jobs, _ := filepath.Glob(filepath.Join(c.work, "slurm-*.out"))
		for _, f := range append(logs, jobs...) {
			b, err := os.ReadFile(f)
			t.Logf("%s (%v):\n%s", f, err, b)
		}
	}
	c.cmd("scontrol", "shutdown").Run() // slurmctld and slurmd
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		if i == 0 { // munged
			p.Process.Signal(syscall.SIGTERM)
		}
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(c.dir)
}

// shell runs script with bash -e in dir and returns the KEY=VALUE pairs
// of its last line of output.
func (c *slurmCluster) shell(t *testing.T, dir string, env []string, script string) map[string]string {
	t.Helper()
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the doc's block failed: %v\n%s\nscript:\n%s", err, out, script)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	kv := map[string]string{}
	for _, f := range strings.Fields(lines[len(lines)-1]) {
		k, v, _ := strings.Cut(f, "=")
		if v == "" {
			t.Fatalf("the block set no %s: %s", k, out)
		}
		kv[k] = v
	}
	return kv
}

// jobField is one field of `scontrol show job ID`.
func (c *slurmCluster) jobField(t *testing.T, id, field string) string {
	t.Helper()
	out, _ := c.cmd("scontrol", "-o", "show", "job", id).Output()
	m := regexp.MustCompile(`\b` + field + `=(\S+)`).FindSubmatch(out)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// waitState waits until job id is in state (and, if not empty, reason),
// failing early when it reaches another final state.
func (c *slurmCluster) waitState(t *testing.T, id, state, reason string) {
	t.Helper()
	waitFor(t, 120*time.Second, "job "+id+" "+state+" "+reason, func() bool {
		st, r := c.jobField(t, id, "JobState"), c.jobField(t, id, "Reason")
		final := st == "FAILED" || st == "CANCELLED" || st == "TIMEOUT" || st == "COMPLETED" || r == "DependencyNeverSatisfied"
		if final && (st != state || r != reason && reason != "") {
			t.Fatalf("job %s is %s (%s), want %s %s", id, st, r, state, reason)
		}
		return st == state && (reason == "" || r == reason)
	})
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
