// The journal's durable mark (issue 25): its cost per group commit is one 40-byte pwrite, not synced,
// against the commit's own write + fdatasync. docs/BENCHMARKS.md, "journal". Usage: durable_mark_cost DIR
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    char path[4096]; char buf[8192]; memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/DURABLE", argv[1]);
    int m = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    snprintf(path, sizeof path, "%s/segment", argv[1]);
    int s = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int n = 200000; double t0 = now();
    for (int i = 0; i < n; i++) pwrite(m, buf, 40, 0);
    double mark = (now() - t0) / n;
    int k = 2000; off_t off = 0; t0 = now();
    for (int i = 0; i < k; i++) { pwrite(s, buf, 4096, off); off += 4096; fdatasync(s); }
    double commit = (now() - t0) / k;
    double plain = 0, both = 0;
    for (int r = 0; r < 10; r++) {  // alternate, so the disk's moods fall on both sides alike
        t0 = now();
        for (int i = 0; i < k / 10; i++) { pwrite(s, buf, 4096, off); off += 4096; fdatasync(s); }
        plain += now() - t0; t0 = now();
        for (int i = 0; i < k / 10; i++) { pwrite(s, buf, 4096, off); off += 4096; fdatasync(s); pwrite(m, buf, 40, 0); }
        both += now() - t0;
    }
    commit = plain / k; both /= k;
    printf("mark pwrite: %.2f us; 4 KiB group commit (write+fdatasync): %.1f us; commit+mark: %.1f us (+%.2f%%)\n",
           mark * 1e6, commit * 1e6, both * 1e6, (both - commit) / commit * 100);
    return 0;
}
