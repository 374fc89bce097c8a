/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_UNITS_H
#define LINERATE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The one checked number parser. Every number on the command line goes
 * through here; none goes through atoi. All parsers return 0 and write *out
 * only on success, -EINVAL for text that is not a number of that kind and
 * -ERANGE for a number outside [min, max].
 */

/* A size in bytes: "65536", "128K", "10M", "1.5G", "2T" (K = 1024), an
 * optional trailing "B" or "iB" ("10MiB", "10MB" mean the same). */
int units_parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A rate in bits per second: "940m", "1g", "1gbit", "500M", "2.5Gbit/s"
 * (k = 1000). A trailing "bit", "bit/s", "bps" or "b" is allowed. */
int units_parse_rate(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * Durations, one grammar for all three: a number with an optional
 * fraction and one suffix, "ms", "s", "m" or "min" (minutes: in a size or
 * a rate m is mega), "h", "d" or "w" ("500ms", "1.5s", "30m", "7d"); a
 * bare number is in the parser's own unit. Lower case only.
 */

/* Seconds: a bare number is seconds ("10", "0.5"). Output in
 * milliseconds, a fraction rounded. */
int units_parse_ms(const char *s, uint64_t min_ms, uint64_t max_ms,
		   uint64_t *out_ms);

/* Milliseconds as iperf3 takes them: a bare number is milliseconds
 * ("500", "2.5"). Output in milliseconds, a fraction rounded. */
int units_parse_msec(const char *s, uint64_t min_ms, uint64_t max_ms,
		     uint64_t *out_ms);

/* An age in whole seconds: a bare number is seconds ("90", "12h",
 * "1.5d"), rounded; from 1 ms up at least 1, so that 0 stays apart. */
int units_parse_age(const char *s, uint64_t min_s, uint64_t max_s,
		    uint64_t *out_s);

/* A plain decimal integer. */
int units_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * Format like iperf3: a byte count with 1024-based units ("138 MBytes",
 * "1.32 GBytes", "902 KBytes") or a bit rate with 1000-based units
 * ("1.13 Gbits/sec"). Writes a NUL-terminated string into buf and returns
 * buf. Four significant characters, as iperf3 prints them.
 */
char *units_fmt_bytes(char *buf, size_t cap, double bytes);
char *units_fmt_rate(char *buf, size_t cap, double bits_per_sec);
/* As iperf3's -f: format k, m, g or t a rate in that many 1000s of bits
 * per second, K, M, G or T in 1024s of bytes per second ("2573
 * MBytes/sec"); any other (0) as units_fmt_rate. */
/* The file commands' units (send, get, recv, gen, disk, serve's transfer
 * lines), as pv and rsync -h: bytes in powers of 1024 with the IEC names,
 * three significant digits ("28.6 MiB", "112 MiB/s", "512 B"). */
char *units_fmt_iec(char *buf, size_t cap, double bytes);
char *units_fmt_iec_rate(char *buf, size_t cap, double bytes_per_sec);
char *units_fmt_rate_as(char *buf, size_t cap, double bits_per_sec,
			char format);

#endif
