/* FG_API marks every function of the public ABI. The library is compiled with hidden
 * visibility, so a shared libforgia exports exactly the FG_API functions (all named fg_*)
 * and nothing of its internals or of the libraries it links.
 *
 * Thread safety, the rule every header follows (each states its own details): objects
 * passed as const may be used from many threads at once; an object passed non-const (a
 * writer, a device stream, an object being closed) is used by one thread at a time; the
 * last-error message is thread-local. */
#ifndef FORGIA_API_H
#define FORGIA_API_H

#if defined(_WIN32)
#define FG_API
#elif defined(__GNUC__) || defined(__clang__)
#define FG_API __attribute__((visibility("default")))
#else
#define FG_API
#endif

#endif
