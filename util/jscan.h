/* SPDX-License-Identifier: MIT */
/*
 * Reading one member of a JSON object in a buffer, without building a tree: what the node
 * health check needs of a summary (its status and first error), whatever else the file holds.
 */
#ifndef STAGEBENCH_JSCAN_H
#define STAGEBENCH_JSCAN_H

#include <stddef.h>

/* How deep arrays and objects may nest before the text is refused as malformed. */
#define JSCAN_MAX_DEPTH 64

/*
 * Find the member key of the top-level object in text[0..len) and copy its value into buf
 * (always terminated, cut to buflen - 1 bytes): a string unescaped (\uXXXX outside ASCII
 * becomes '?'), an array its first element if that is a string (an empty array: ""), a
 * number, true, false or null its text. Members before it are checked and skipped, nested
 * no deeper than JSCAN_MAX_DEPTH. Returns 0; -ENOENT when the object has no such member (or
 * its value is an object, or an array whose first element is not a string); -EINVAL when the
 * text is not a JSON object up to and including that member. buf is "" unless 0.
 */
int jscan_member(const char *text, size_t len, const char *key, char *buf, size_t buflen);

#endif
