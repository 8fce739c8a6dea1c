/*
 * Result checks shared by the MPI tests that run with MPI_ERRORS_RETURN:
 * a failed check counts in @a errors (summed over ranks at the end) and
 * prints one line, for the first 10 failures of a rank only, so that a
 * broken run stays readable.
 */
#ifndef MPI_CHECK_H_
#define MPI_CHECK_H_

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>

static int errors;     /* failed checks on this rank */
static int calls;      /* MPI calls checked by CALL/CALLF on this rank */
static int check_rank; /* rank in MPI_COMM_WORLD, printed with failures */

static void check_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void check_fail(const char *fmt, ...)
{
    va_list ap;

    if (errors++ >= 10) {
        return;
    }

    printf("rank %d: FAIL: ", check_rank);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            check_fail(__VA_ARGS__); \
        } \
    } while (0)

/* An MPI call must return MPI_SUCCESS; a failure is reported with the
 * printf-style context (_fmt, ...) followed by MPI's error string */
#define CALLF(_call, _fmt, ...) \
    do { \
        int _rc = (_call), _len; \
        char _msg[MPI_MAX_ERROR_STRING] = ""; \
        ++calls; \
        if (_rc != MPI_SUCCESS) { \
            MPI_Error_string(_rc, _msg, &_len); \
            check_fail(_fmt ": %s (%d)", __VA_ARGS__, _msg, _rc); \
        } \
    } while (0)

#define CALL(_what, _call) CALLF(_call, "%s", _what)

/* MPI_Init; this rank's place in MPI_COMM_WORLD, whose calls then return
 * their errors (for CALL to check) instead of aborting the job */
static void check_init(int *argc, char ***argv, int *rank, int *size)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_rank = *rank;
}

#endif
