"""Starting and stopping `glimpse serve` processes for the benchmark tools (loopback only)."""
import subprocess
import sys
import time


def start_server(binary, models, port, flags, log_path):
    """Starts `glimpse serve` on 127.0.0.1:port and returns the process once /readyz answers (at most
    30 s); exits naming the log if the server exits or never becomes ready."""
    proc = subprocess.Popen([binary, "serve", "--models", models, "--host", "127.0.0.1", "--port", str(port)] + flags,
                            stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
    for _ in range(60):
        if subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "1", f"http://127.0.0.1:{port}/readyz"]).returncode == 0:
            return proc
        if proc.poll() is not None:
            sys.exit(f"a server exited: see {log_path}")
        time.sleep(0.5)
    proc.kill()
    sys.exit(f"a server did not become ready in 30 s: see {log_path}")


def stop_servers(procs):
    """Terminates the processes, killing any that has not exited 10 s later."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
