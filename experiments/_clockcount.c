/* The clock-read counter of experiments/collective_clock.py, preloaded (LD_PRELOAD) into each
 * training worker ahead of libfaketime. It counts, in process-wide atomic counters, every call
 * the program makes to clock_gettime(CLOCK_REALTIME[_COARSE]), gettimeofday() and time() (the
 * wall clock), and to clock_gettime on the monotonic clocks (for contrast), then hands the call
 * on (to libfaketime when it is preloaded after us, else to libc). The worker reads the counters
 * through clockcount_read() before and after each all-reduce.
 *
 * Hand-written because nothing packaged counts calls: ltrace and uftrace slow every call by
 * orders of magnitude (the step time is what is measured), perf's uprobes need root and a
 * kernel with them, and libfaketime itself counts nothing. Compiled at run time with the
 * system's cc (bench: experiments/collective_clock.py, build_shim).
 *
 * It also routes clock_nanosleep on the monotonic clocks straight to the kernel: libfaketime
 * 0.9.10 with FAKETIME_DONT_FAKE_MONOTONIC turns an absolute monotonic deadline into a negative
 * time (EINVAL: wolfcw/libfaketime issue 426), which breaks Python 3.11's time.sleep. The
 * monotonic clock is never faked here, so the kernel's own call is the unperturbed one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_llong counts[4];   /* realtime clock_gettime, gettimeofday, time, monotonic */

typedef int (*gettime_fn)(clockid_t, struct timespec *);
typedef int (*gtod_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);
typedef int (*nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);

static int monotonic(clockid_t id) {
    return id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_COARSE || id == CLOCK_MONOTONIC_RAW
        || id == CLOCK_BOOTTIME;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    static gettime_fn next;
    if (!next) next = (gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) atomic_fetch_add(&counts[0], 1);
    else if (monotonic(id)) atomic_fetch_add(&counts[3], 1);
    return next(id, ts);
}

int gettimeofday(struct timeval *tv, void *tz) {
    static gtod_fn next;
    if (!next) next = (gtod_fn)dlsym(RTLD_NEXT, "gettimeofday");
    atomic_fetch_add(&counts[1], 1);
    return next(tv, tz);
}

time_t time(time_t *t) {
    static time_fn next;
    if (!next) next = (time_fn)dlsym(RTLD_NEXT, "time");
    atomic_fetch_add(&counts[2], 1);
    return next(t);
}

int clock_nanosleep(clockid_t id, int flags, const struct timespec *req, struct timespec *rem) {
    static nanosleep_fn next;
    if (monotonic(id))
        return syscall(SYS_clock_nanosleep, id, flags, req, rem) == 0 ? 0 : errno;
    if (!next) next = (nanosleep_fn)dlsym(RTLD_NEXT, "clock_nanosleep");
    return next(id, flags, req, rem);
}

void clockcount_read(long long out[4]) {
    for (int i = 0; i < 4; i++) out[i] = atomic_load(&counts[i]);
}
