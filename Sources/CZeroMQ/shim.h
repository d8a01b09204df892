// The C surface the ZeroMQ Swift target sees: libzmq plus eventfd (for the Waker).
#ifndef CZEROMQ_SHIM_H
#define CZEROMQ_SHIM_H
#include <zmq.h>
#include <sys/eventfd.h>
#include <errno.h>

// errno is a macro over a thread-local on glibc; a function is simpler to call from Swift.
static inline int czmq_errno(void) { return errno; }
#endif
