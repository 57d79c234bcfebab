/* The decode kernels of a warm read and the write's kernels (X lines, numbers and text placed in
   the rows of observations), compiled ahead of time (issue 30).

   Each function here is the C twin of a numba kernel (the reference, which the tests compare
   it with byte for byte); compiled.py decides which one runs. Being compiled when the package
   is built, a fresh Python worker loads them with the package instead of importing numba and
   its cache (0.35 s). Each releases the GIL while it works, as the numba kernels (nogil) do.

   Arrays come through the buffer protocol (numpy arrays, bytes, bytearray): C-contiguous, of
   the element type the kernel reads, aligned to it, which is checked. Unlike the numba kernels, which trust
   their callers' bounds, every index written or read is checked here against its buffer,
   before the loops where that is possible: a bad call raises ValueError, never touches memory
   outside its buffers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- buffers --------------------------------------------------------------------------- */

enum { ANY_INT = 'i', ANY_UINT = 'u', FLOAT = 'f', BOOL = '?', NUMBER = 'n' };

/* A C-contiguous buffer of `ndim` dimensions (0: any) whose items are `kind` of `itemsize`
   bytes (itemsize 0: 4 or 8). Returns 0, or -1 with an exception set. */
static int
take(PyObject *obj, Py_buffer *view, const char *name, char kind, Py_ssize_t itemsize, int ndim, int writable)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_ND | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    const char *format = view->format ? view->format : "B";
    while (*format == '@' || *format == '=' || *format == '<' || *format == '>' || *format == '!')
        format++;
    int ok = format[0] != 0 && format[1] == 0;
    if (ok) {
        switch (kind) {
        case ANY_INT: ok = strchr("bhilqn", format[0]) != NULL; break;
        case ANY_UINT: ok = strchr("BHILQNc", format[0]) != NULL; break;
        case FLOAT: ok = format[0] == 'd'; break;
        case NUMBER: ok = strchr("ilqnfd", format[0]) != NULL; break; /* int32, int64, float32, float64 */
        default: ok = format[0] == '?'; break;
        }
    }
    ok = ok && (itemsize ? view->itemsize == itemsize : (view->itemsize == 4 || view->itemsize == 8));
    ok = ok && (ndim == 0 || view->ndim == ndim);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: expected a %d-dimensional array of %c%zd, not format %s of %zd bytes, "
                     "%d dimensions", name, ndim, kind, itemsize, view->format ? view->format : "B",
                     view->itemsize, view->ndim);
        PyBuffer_Release(view);
        return -1;
    }
    /* The kernels read items through typed pointers, which must be aligned (C's rule, not only the
       machine's: a misaligned int64_t load is undefined behaviour, which UBSan reports). numpy makes
       aligned arrays; a view at an odd offset (np.frombuffer(..., offset=3)) is refused. */
    if ((uintptr_t)view->buf % (uintptr_t)view->itemsize != 0) {
        PyErr_Format(PyExc_ValueError, "%s: the array is not aligned to its %zd-byte items", name, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static Py_ssize_t
items(const Py_buffer *view)
{
    return view->len / view->itemsize;
}

/* Rows and columns of a 2-dimensional buffer. */
static Py_ssize_t
rows_of(const Py_buffer *view)
{
    return view->shape[0];
}

static Py_ssize_t
columns_of(const Py_buffer *view)
{
    return view->shape[1];
}

static void
release(Py_buffer *views, int n)
{
    for (int i = 0; i < n; i++)
        PyBuffer_Release(&views[i]);
}

/* Whether two buffers share a byte. */
static int
overlap(const void *a, Py_ssize_t a_len, const void *b, Py_ssize_t b_len)
{
    return a_len && b_len && (uintptr_t)a < (uintptr_t)b + (uintptr_t)b_len
           && (uintptr_t)b < (uintptr_t)a + (uintptr_t)a_len;
}

/* One array argument of a kernel: what take() checks it for. */
typedef struct {
    const char *name;
    char kind;
    Py_ssize_t itemsize;
    int ndim;
    int writable;
} ArraySpec;

/* take() of each of the n objects by its spec, in order; on a failure those taken are released. */
static int
take_all(PyObject *const *objs, Py_buffer *views, const ArraySpec *specs, int n)
{
    for (int i = 0; i < n; i++) {
        if (take(objs[i], &views[i], specs[i].name, specs[i].kind, specs[i].itemsize, specs[i].ndim,
                 specs[i].writable) < 0) {
            release(views, i);
            return -1;
        }
    }
    return 0;
}

/* ---- hex lines (transports/mq/hex_lines.py) ---------------------------------------------- */

/* The hex loops are compiled twice, for AVX2 and for any x86-64, and the machine's is chosen when
   the module loads (GCC's function multi-versioning): numba compiles for the machine it runs on,
   a wheel cannot. */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#define FOR_THIS_MACHINE __attribute__((target_clones("avx2", "default")))
#else
#define FOR_THIS_MACHINE
#endif

#define DIGIT_BLOCK (1 << 15)
#define NOT_HEX_IN_WORD 0x8080808080808080ULL
#define OUT_OF_BOUNDS (-2)

/* hex_lines.digit_value: the value of a hex digit, or'ed with 0x80 when it is none. */
static inline uint8_t
digit_value(uint8_t c)
{
    uint8_t not_hex = ((uint8_t)(c - 48) > 9) & ((uint8_t)((c | 0x20) - 97) > 5);
    return (uint8_t)(((c & 0xF) + 9 * (c >> 6)) | (not_hex << 7));
}

typedef struct {
    uint8_t *data;
    Py_ssize_t size;
} Out;

/* hex_lines.decode_gathered. Returns the not-hex flags, or sets *bad when a write would leave
   its buffer. */
FOR_THIS_MACHINE static uint64_t
decode_gathered(uint8_t *digits, Py_ssize_t count, Out head_out, Py_ssize_t head_at, Py_ssize_t head_bytes,
                Out out, Py_ssize_t at, int *bad)
{
    Py_ssize_t padded = (count + 7) & ~(Py_ssize_t)7;
    Py_ssize_t rest = (count >> 1) - head_bytes;
    if (head_bytes < 0 || rest < 0 || padded > DIGIT_BLOCK + 8
        || (head_bytes > 0 && (head_at < 0 || head_at > head_out.size - head_bytes))
        || (rest > 0 && (at < 0 || at > out.size - rest))) {
        *bad = 1;
        return 0;
    }
    for (Py_ssize_t j = count; j < padded; j++)
        digits[j] = 0;
    for (Py_ssize_t j = 0; j < count; j++)
        digits[j] = digit_value(digits[j]);
    uint64_t flags = 0;
    for (Py_ssize_t i = 0; i < padded; i += 8) {
        uint64_t word;
        memcpy(&word, digits + i, 8);
        flags |= word;
    }
    uint8_t *to = head_out.data + head_at;
    for (Py_ssize_t i = 0; i < head_bytes; i++)
        to[i] = (uint8_t)((digits[2 * i] << 4) | digits[2 * i + 1]);
    const uint8_t *from = digits + 2 * head_bytes;
    to = out.data + at;
    for (Py_ssize_t i = 0; i < rest; i++)
        to[i] = (uint8_t)((from[2 * i] << 4) | from[2 * i + 1]);
    return flags & NOT_HEX_IN_WORD;
}

/* hex_lines.decode_payload_bytes */
static uint64_t
decode_payload_bytes(uint8_t *digits, Py_ssize_t n, Py_ssize_t k, Py_ssize_t h, Out out, Py_ssize_t out_at,
                     Out head_out, Py_ssize_t head_at, int *bad)
{
    Py_ssize_t to_head = h - k > 0 ? h - k : 0;
    if (to_head > (n >> 1))
        to_head = n >> 1;
    return decode_gathered(digits, n, head_out, head_at + k, to_head, out, out_at + (k - h > 0 ? k - h : 0), bad);
}

/* hex_lines.gather: callers keep n + stop - q <= DIGIT_BLOCK, with q <= stop inside the text. */
static inline Py_ssize_t
gather(uint8_t *digits, Py_ssize_t n, const uint8_t *text, Py_ssize_t q, Py_ssize_t stop)
{
    memcpy(digits + n, text + q, (size_t)(stop - q));
    return n + stop - q;
}

/* hex_lines.gather_past_block: returns the digits gathered; *k and *flags updated. */
static Py_ssize_t
gather_past_block(uint8_t *digits, Py_ssize_t n, const uint8_t *text, Py_ssize_t q, Py_ssize_t stop,
                  Py_ssize_t *k, Py_ssize_t h, Out out, Py_ssize_t out_at, Out head_out, Py_ssize_t head_at,
                  uint64_t *flags, int *bad)
{
    while (n + stop - q > DIGIT_BLOCK) {
        Py_ssize_t take_ = DIGIT_BLOCK - n;
        n = gather(digits, n, text, q, q + take_);
        q += take_;
        *flags |= decode_payload_bytes(digits, n, *k, h, out, out_at, head_out, head_at, bad);
        if (*bad)
            return 0;
        *k += n >> 1;
        n = 0;
    }
    return gather(digits, n, text, q, stop);
}

/* hex_lines.line_end */
static inline Py_ssize_t
line_end(const uint8_t *text, Py_ssize_t p, Py_ssize_t e)
{
    const uint8_t *found = p < e ? memchr(text + p, '\n', (size_t)(e - p)) : NULL;
    return found ? found - text : (p < e ? e : p);
}

/* The block the hex loops gather digits in; NULL with the n buffers released and MemoryError set. */
static uint8_t *
digit_block(Py_buffer *views, int n)
{
    uint8_t *digits = PyMem_RawMalloc(DIGIT_BLOCK + 8);
    if (digits == NULL) {
        release(views, n);
        PyErr_NoMemory();
    }
    return digits;
}

/* The digit block of a hex pass over text[pos:size], the text in views[0]; NULL with the n buffers
   released and ValueError set (a range outside the text) or MemoryError. */
static uint8_t *
text_digit_block(Py_buffer *views, int n, Py_ssize_t pos, Py_ssize_t size, const char *name)
{
    if (pos < 0 || size < pos || size > views[0].len) {
        release(views, n);
        PyErr_Format(PyExc_ValueError, "%s: text[%zd:%zd] is outside a text of %zd bytes", name, pos, size,
                     views[0].len);
        return NULL;
    }
    return digit_block(views, n);
}

/* hex_lines._x_run: (end or -1, written); OUT_OF_BOUNDS when out is too small. */
static Py_ssize_t
x_run_pass(const uint8_t *text, Py_ssize_t pos, Py_ssize_t size, Out out, uint8_t *digits, int trust_width,
           Py_ssize_t *written_out)
{
    Py_ssize_t p = pos, written = 0, end = -1, width = 0, n = 0;
    uint64_t flags = 0;
    int bad = 0;
    *written_out = 0;
    while (p < size && text[p] == 'X') {
        if (p + 1 >= size || text[p + 1] != ' ')
            return -1;
        Py_ssize_t start = p + 2;
        Py_ssize_t stop = start + width;
        if (!(trust_width && stop + 1 < size && text[stop] == '\n' && text[stop + 1] == 'X')) {
            stop = line_end(text, start, size);
            if ((stop - start) & 1)
                return -1;
            width = stop - start;
        }
        if (n + stop - start <= DIGIT_BLOCK)
            n = gather(digits, n, text, start, stop);
        else
            n = gather_past_block(digits, n, text, start, stop, &written, 0, out, 0, out, 0, &flags, &bad);
        if (bad)
            return OUT_OF_BOUNDS;
        end = stop;
        p = stop + 1;
    }
    flags |= decode_payload_bytes(digits, n, written, 0, out, 0, out, 0, &bad);
    if (bad)
        return OUT_OF_BOUNDS;
    written += n >> 1;
    if (flags)
        return -1;
    *written_out = written;
    return end;
}

/* hex_lines.x_run: the pass that trusts line widths, then, when it finds a digit that is no hex
   digit, the one that looks for each line's end. */
static Py_ssize_t
x_run_passes(const uint8_t *text, Py_ssize_t pos, Py_ssize_t size, Out out, uint8_t *digits, Py_ssize_t *written)
{
    Py_ssize_t end = x_run_pass(text, pos, size, out, digits, 1, written);
    return end == -1 ? x_run_pass(text, pos, size, out, digits, 0, written) : end;
}

static PyObject *
x_run(PyObject *self, PyObject *args)
{
    PyObject *objs[2];
    Py_ssize_t pos, size;
    if (!PyArg_ParseTuple(args, "OnnO:x_run", &objs[0], &pos, &size, &objs[1]))
        return NULL;
    static const ArraySpec specs[2] = {{"text", ANY_UINT, 1, 0, 0}, {"out", ANY_UINT, 1, 0, 1}};
    Py_buffer v[2];
    if (take_all(objs, v, specs, 2) < 0)
        return NULL;
    uint8_t *digits = text_digit_block(v, 2, pos, size, "x_run");
    if (digits == NULL)
        return NULL;
    Out out = {v[1].buf, v[1].len};
    Py_ssize_t end, written;
    Py_BEGIN_ALLOW_THREADS
    end = x_run_passes(v[0].buf, pos, size, out, digits, &written);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(digits);
    release(v, 2);
    if (end == OUT_OF_BOUNDS)
        return PyErr_Format(PyExc_ValueError, "x_run: out (%zd bytes) is too small for the run", out.size);
    if (end < 0)
        written = 0;
    return Py_BuildValue("nn", end, written);
}

/* ---- plain dump records (transports/mq/dmpmqmsg.py) -------------------------------------- */

/* Where the filler lines from text[p] end (empty lines, comments, lines of blanks only), as
   dmpmqmsg._FILLER_LINES and the line parser skip them; a last line without its LF counts. */
static Py_ssize_t
skip_filler(const uint8_t *t, Py_ssize_t p, Py_ssize_t size)
{
    while (p < size) {
        Py_ssize_t e = line_end(t, p, size);
        if (t[p] != '*') {
            for (Py_ssize_t i = p; i < e; i++) {
                uint8_t c = t[i];
                if (c != ' ' && c != '\t' && c != '\r' && c != '\x0b' && c != '\x0c')
                    return p;
            }
        }
        p = e + 1;
    }
    return size;
}

static inline int
is_attribute_line(const uint8_t *t, Py_ssize_t p, Py_ssize_t size)
{
    return p + 1 < size && t[p] == 'A' && t[p + 1] == ' ';
}

/* dmpmqmsg._plain_records: the plain records from text[pos] on, at most `capacity` and no more
   once their payloads fill `budget` bytes of out (memory first touched costs a page fault), each a row
   of `records` (start, end of its attribute block: the last A line's LF, end of its X run, end
   of its payload in out, the payloads laid end to end); *stop: where the first record not taken
   (or the first line that opens none) starts. A plain record is filler lines, a block of "A "
   lines without CRs, at once a run of X lines x_run_pass takes, then filler lines up to the
   next "A " line or the end: anything else is left to the line parser. */
static Py_ssize_t
plain_records(const uint8_t *t, Py_ssize_t pos, Py_ssize_t size, Out out, Py_ssize_t budget, uint8_t *digits,
              int64_t *records, Py_ssize_t capacity, Py_ssize_t *stop)
{
    Py_ssize_t p = skip_filler(t, pos, size), count = 0, at = 0;
    while (count < capacity && at < budget && is_attribute_line(t, p, size)) {
        Py_ssize_t q = p, attributes_end = -1;
        while (is_attribute_line(t, q, size)) {
            Py_ssize_t e = line_end(t, q, size);
            if (e >= size || memchr(t + q, '\r', (size_t)(e - q)) != NULL)
                break;
            attributes_end = e;
            q = e + 1;
        }
        if (attributes_end < 0 || q != attributes_end + 1 || q >= size || t[q] != 'X')
            break;
        Out rest = {out.data + at, out.size - at};
        Py_ssize_t written;
        Py_ssize_t end = x_run_passes(t, q, size, rest, digits, &written);
        if (end < 0)
            break;
        Py_ssize_t next = end >= size ? size : skip_filler(t, end + 1, size);
        if (next < size && !is_attribute_line(t, next, size))
            break;
        at += written;
        int64_t *row = records + 4 * count++;
        row[0] = p;
        row[1] = attributes_end;
        row[2] = end;
        row[3] = at;
        p = next;
    }
    *stop = p;
    return count;
}

static PyObject *
dump_records(PyObject *self, PyObject *args)
{
    PyObject *objs[3];
    Py_ssize_t pos, size, budget;
    if (!PyArg_ParseTuple(args, "OnnOnO:plain_records", &objs[0], &pos, &size, &objs[1], &budget, &objs[2]))
        return NULL;
    static const ArraySpec specs[3] = {{"text", ANY_UINT, 1, 0, 0}, {"out", ANY_UINT, 1, 0, 1},
                                       {"records", ANY_INT, 8, 2, 1}};
    Py_buffer v[3];
    if (take_all(objs, v, specs, 3) < 0)
        return NULL;
    if (v[2].shape[1] != 4) {
        release(v, 3);
        return PyErr_Format(PyExc_ValueError, "plain_records: records need 4 columns, not %zd", v[2].shape[1]);
    }
    uint8_t *digits = text_digit_block(v, 3, pos, size, "plain_records");
    if (digits == NULL)
        return NULL;
    Out out = {v[1].buf, v[1].len};
    Py_ssize_t count, stop;
    Py_BEGIN_ALLOW_THREADS
    count = plain_records(v[0].buf, pos, size, out, budget, digits, v[2].buf, rows_of(&v[2]), &stop);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(digits);
    release(v, 3);
    return Py_BuildValue("nn", count, stop);
}

/* ---- attribute lines of plain dump records (transports/mq/dmpmqmsg.py) ------------------- */

/* How an attribute code's value is read: dmpmqmsg._ATTRIBUTE_KINDS numbers them so. */
enum { ATTRIBUTE_INT, ATTRIBUTE_HEX, ATTRIBUTE_TEXT, ATTRIBUTE_CHARACTERS };
#define ATTRIBUTE_CODES_MAX 64
#define ATTRIBUTE_SIZE_MAX 256
#define MQLONG_LIMIT 2147483648LL

/* One row of dmpmqmsg._ATTRIBUTE_TABLE (made from the field table mqmd.FIELDS_BY_DUMP_CODE):
   (code, field name, kind, size, default); borrowed from the table, which the call holds. And the
   value the code's last line gave (a reference held), given again to the next line that reads
   the same: the records of a dump repeat most lines, whose values are then made once a call. */
typedef struct {
    const char *code;
    PyObject *name;
    int kind;
    Py_ssize_t size;
    PyObject *fallback;  /* the default: the value itself when a line gives it (shared, not copied) */
    const uint8_t *fallback_bytes;  /* its bytes (hex, characters) or latin-1 text; NULL for numbers */
    PyObject *last;
    long long last_number;
    uint8_t last_raw[ATTRIBUTE_SIZE_MAX];
} AttributeCode;

/* Python's bytes.strip() whitespace */
static inline int
is_strip_blank(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c';
}

/* The rows of the table, checked; -1 with TypeError set when one is not as dmpmqmsg makes them. */
static Py_ssize_t
attribute_codes(PyObject *table, AttributeCode *codes)
{
    if (!PyTuple_Check(table) || PyTuple_GET_SIZE(table) > ATTRIBUTE_CODES_MAX) {
        PyErr_SetString(PyExc_TypeError, "attribute_fields: the table is a tuple of at most 64 rows");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(table);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyTuple_GET_ITEM(table, i);
        AttributeCode *a = &codes[i];
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 5 || !PyBytes_Check(PyTuple_GET_ITEM(row, 0))
            || PyBytes_GET_SIZE(PyTuple_GET_ITEM(row, 0)) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(row, 1))
            || !PyLong_Check(PyTuple_GET_ITEM(row, 2)) || !PyLong_Check(PyTuple_GET_ITEM(row, 3)))
            goto bad;
        a->code = PyBytes_AS_STRING(PyTuple_GET_ITEM(row, 0));
        a->name = PyTuple_GET_ITEM(row, 1);
        a->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(row, 2));
        a->size = PyLong_AsSsize_t(PyTuple_GET_ITEM(row, 3));
        a->fallback = PyTuple_GET_ITEM(row, 4);
        a->fallback_bytes = NULL;
        a->last = NULL;
        if (PyErr_Occurred() || a->kind < ATTRIBUTE_INT || a->kind > ATTRIBUTE_CHARACTERS || a->size < 1
            || a->size > ATTRIBUTE_SIZE_MAX)
            goto bad;
        if (a->kind == ATTRIBUTE_TEXT) {
            if (!PyUnicode_Check(a->fallback) || PyUnicode_KIND(a->fallback) != PyUnicode_1BYTE_KIND
                || PyUnicode_GET_LENGTH(a->fallback) != a->size)
                goto bad;
            a->fallback_bytes = PyUnicode_1BYTE_DATA(a->fallback);
        } else if (a->kind != ATTRIBUTE_INT) {
            if (!PyBytes_Check(a->fallback) || PyBytes_GET_SIZE(a->fallback) != a->size)
                goto bad;
            a->fallback_bytes = (const uint8_t *)PyBytes_AS_STRING(a->fallback);
        }
    }
    return n;
bad:
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "attribute_fields: a row of the table is not (code of 3 bytes, name, kind, "
                                     "size 1-256, default of that size)");
    return -1;
}

/* Outcomes of reading one attribute line. */
enum { LINE_PARSED, LINE_VALUELESS, LINE_DECLINED, LINE_FAILED };

/* dmpmqmsg._parse_attribute of the line t[p:e] in the well-formed case: LINE_PARSED with *value a
   new reference (or the default's, shared), LINE_VALUELESS, LINE_DECLINED for any line that
   case does not cover (the line parser then reads it and raises its error), or LINE_FAILED
   (MemoryError). A number is [-]digits, hex an even run of digits with no blanks, characters
   at most their size or blanks after it. */
static int
attribute_line(const uint8_t *t, Py_ssize_t p, Py_ssize_t e, AttributeCode *codes, Py_ssize_t n,
               Py_ssize_t *next, const AttributeCode **found, PyObject **value)
{
    if (e - p < 5)
        return LINE_DECLINED;
    /* dmpmqmsg writes the codes in the table's order: the row after the last line's, first */
    Py_ssize_t i = *next < n && memcmp(codes[*next].code, t + p + 2, 3) == 0 ? *next : 0;
    while (i < n && memcmp(codes[i].code, t + p + 2, 3) != 0)
        i++;
    if (i == n)
        return LINE_DECLINED;
    *next = i + 1;
    AttributeCode *a = &codes[i];
    if (e - p < 7)
        return LINE_VALUELESS;
    *found = a;
    const uint8_t *v = t + p + 6;
    Py_ssize_t length = e - p - 6, size = a->size;
    if (a->kind == ATTRIBUTE_INT) {
        int negative = v[0] == '-';
        Py_ssize_t digits = length - negative;
        if (digits < 1 || digits > 10)
            return LINE_DECLINED;
        long long number = 0;
        for (Py_ssize_t i = negative; i < length; i++) {
            if ((uint8_t)(v[i] - '0') > 9)
                return LINE_DECLINED;
            number = number * 10 + (v[i] - '0');
        }
        if (number > MQLONG_LIMIT - !negative)
            return LINE_DECLINED;
        number = negative ? -number : number;
        if (a->last == NULL || number != a->last_number) {
            Py_XSETREF(a->last, PyLong_FromLongLong(number));
            if (a->last == NULL)
                return LINE_FAILED;
            a->last_number = number;
        }
        Py_INCREF(a->last);
        *value = a->last;
        return LINE_PARSED;
    }
    uint8_t raw[ATTRIBUTE_SIZE_MAX];
    if (a->kind == ATTRIBUTE_HEX) {
        if ((length & 1) || length > 2 * size)
            return LINE_DECLINED;
        uint8_t bad = 0;
        for (Py_ssize_t i = 0; i < length / 2; i++) {
            uint8_t high = digit_value(v[2 * i]), low = digit_value(v[2 * i + 1]);
            bad |= high | low;
            raw[i] = (uint8_t)((high << 4) | (low & 0xF));
        }
        if (bad & 0x80)
            return LINE_DECLINED;
        memcpy(raw + length / 2, a->fallback_bytes + length / 2, (size_t)(size - length / 2));
    } else {
        Py_ssize_t kept = length < size ? length : size;
        for (Py_ssize_t i = size; i < length; i++) {
            if (!is_strip_blank(v[i]))
                return LINE_DECLINED;
        }
        memcpy(raw, v, (size_t)kept);
        memset(raw + kept, ' ', (size_t)(size - kept));
    }
    if (a->last == NULL || memcmp(raw, a->last_raw, (size_t)size) != 0) {
        if (memcmp(raw, a->fallback_bytes, (size_t)size) == 0) {
            Py_INCREF(a->fallback);
            Py_XSETREF(a->last, a->fallback);
        } else if (a->kind == ATTRIBUTE_TEXT) {
            Py_XSETREF(a->last, PyUnicode_DecodeLatin1((const char *)raw, size, NULL));
        } else {
            Py_XSETREF(a->last, PyBytes_FromStringAndSize((const char *)raw, size));
        }
        if (a->last == NULL)
            return LINE_FAILED;
        memcpy(a->last_raw, raw, (size_t)size);
    }
    Py_INCREF(a->last);
    *value = a->last;
    return LINE_PARSED;
}

/* The fields of the attribute block t[start:end] (its lines "A ..." apart by LFs), as
   dmpmqmsg._attribute_block gives them; Py_None when a line is not in the well-formed case;
   NULL with an exception set. */
static PyObject *
attribute_block_fields(const uint8_t *t, Py_ssize_t start, Py_ssize_t end, AttributeCode *codes,
                       Py_ssize_t n)
{
    PyObject *fields = PyDict_New();
    if (fields == NULL)
        return NULL;
    Py_ssize_t next = 0;
    for (Py_ssize_t p = start; p <= end;) {
        Py_ssize_t e = line_end(t, p, end);
        const AttributeCode *a = NULL;
        PyObject *value = NULL;
        int outcome = attribute_line(t, p, e, codes, n, &next, &a, &value);
        if (outcome == LINE_PARSED) {
            int failed = PyDict_SetItem(fields, a->name, value) < 0;
            Py_DECREF(value);
            if (failed)
                outcome = LINE_FAILED;
        }
        if (outcome == LINE_FAILED) {
            Py_DECREF(fields);
            return NULL;
        }
        if (outcome == LINE_DECLINED) {
            Py_DECREF(fields);
            Py_RETURN_NONE;
        }
        p = e + 1;
    }
    return fields;
}

/* The values the attribute block t[start:end] gives the codes of the table rows `wanted` (their
   indexes), as attribute_block_fields reads its lines: a tuple in the order of `wanted`, a code the
   block gives no value holding its default; Py_None when a line is not in the well-formed case;
   NULL with an exception set. `slot`: each row's place in `wanted`, -1 for none. */
static PyObject *
attribute_block_values(const uint8_t *t, Py_ssize_t start, Py_ssize_t end, AttributeCode *codes, Py_ssize_t n,
                       const Py_ssize_t *wanted, const Py_ssize_t *slot, Py_ssize_t count)
{
    PyObject *values[ATTRIBUTE_CODES_MAX] = {NULL};
    Py_ssize_t next = 0;
    int outcome = LINE_PARSED;
    for (Py_ssize_t p = start; p <= end;) {
        Py_ssize_t e = line_end(t, p, end);
        const AttributeCode *a = NULL;
        PyObject *value = NULL;
        outcome = attribute_line(t, p, e, codes, n, &next, &a, &value);
        if (outcome == LINE_PARSED) {
            Py_ssize_t k = slot[a - codes];
            if (k >= 0)
                Py_XSETREF(values[k], value);  /* a later line of a field overrides an earlier one */
            else
                Py_DECREF(value);
        }
        if (outcome == LINE_FAILED || outcome == LINE_DECLINED)
            break;
        p = e + 1;
    }
    PyObject *result = NULL;
    if (outcome == LINE_DECLINED) {
        result = Py_NewRef(Py_None);
    } else if (outcome != LINE_FAILED && (result = PyTuple_New(count)) != NULL) {
        for (Py_ssize_t k = 0; k < count; k++) {
            PyTuple_SET_ITEM(result, k, values[k] != NULL ? values[k] : Py_NewRef(codes[wanted[k]].fallback));
            values[k] = NULL;
        }
    }
    for (Py_ssize_t k = 0; k < count; k++)
        Py_XDECREF(values[k]);
    return result;
}

/* dmpmqmsg._plain_attribute_fields: a list of the fields of each record's attribute block
   (the rows of plain_records: start, end of the block), None for one the line parser reads; with
   `wanted` (a tuple of indexes of table rows), the values of those codes alone, a tuple a record
   (attribute_block_values). */
static PyObject *
attribute_fields(PyObject *self, PyObject *args)
{
    PyObject *objs[2], *table, *wanted_rows = NULL;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "OOnO|O:attribute_fields", &objs[0], &objs[1], &count, &table, &wanted_rows))
        return NULL;
    AttributeCode codes[ATTRIBUTE_CODES_MAX];
    Py_ssize_t n = attribute_codes(table, codes);
    if (n < 0)
        return NULL;
    Py_ssize_t wanted[ATTRIBUTE_CODES_MAX], slot[ATTRIBUTE_CODES_MAX], wanted_count = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        slot[i] = -1;
    if (wanted_rows != NULL) {
        if (!PyTuple_Check(wanted_rows) || PyTuple_GET_SIZE(wanted_rows) > n)
            return PyErr_Format(PyExc_TypeError, "attribute_fields: wanted is a tuple of at most %zd rows", n);
        wanted_count = PyTuple_GET_SIZE(wanted_rows);
        for (Py_ssize_t k = 0; k < wanted_count; k++) {
            Py_ssize_t row = PyLong_AsSsize_t(PyTuple_GET_ITEM(wanted_rows, k));
            if (row == -1 && PyErr_Occurred())
                return NULL;
            if (row < 0 || row >= n || slot[row] >= 0)
                return PyErr_Format(PyExc_ValueError, "attribute_fields: wanted names row %zd (of %zd) twice or "
                                    "none", row, n);
            wanted[k] = row;
            slot[row] = k;
        }
    }
    static const ArraySpec specs[2] = {{"text", ANY_UINT, 1, 0, 0}, {"records", ANY_INT, 8, 2, 0}};
    Py_buffer v[2];
    if (take_all(objs, v, specs, 2) < 0)
        return NULL;
    const uint8_t *t = v[0].buf;
    const int64_t *records = v[1].buf;
    Py_ssize_t columns = columns_of(&v[1]);
    if (count < 0 || count > rows_of(&v[1]) || columns < 2) {
        release(v, 2);
        return PyErr_Format(PyExc_ValueError, "attribute_fields: %zd records of a %zd x %zd array", count,
                            rows_of(&v[1]), columns);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        const int64_t *row = records + i * columns;
        if (row[0] < 0 || row[1] < row[0] || row[1] > v[0].len) {
            release(v, 2);
            return PyErr_Format(PyExc_ValueError, "attribute_fields: record %zd's block [%lld:%lld] is outside a "
                                "text of %zd bytes", i, (long long)row[0], (long long)row[1], v[0].len);
        }
    }
    PyObject *result = PyList_New(count);
    for (Py_ssize_t i = 0; result != NULL && i < count; i++) {
        const int64_t *row = records + i * columns;
        PyObject *fields = wanted_rows != NULL
            ? attribute_block_values(t, (Py_ssize_t)row[0], (Py_ssize_t)row[1], codes, n, wanted, slot, wanted_count)
            : attribute_block_fields(t, (Py_ssize_t)row[0], (Py_ssize_t)row[1], codes, n);
        if (fields == NULL)
            Py_CLEAR(result);
        else
            PyList_SET_ITEM(result, i, fields);
    }
    release(v, 2);
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(codes[i].last);
    return result;
}

/* ---- dump spans (transports/mq/dump_spans.py) ------------------------------------------------ */

/* dump_spans._decode_span: the payload's length, -1 when the kernel does not take the span, or
   OUT_OF_BOUNDS; *width updated as the numba kernel returns it. */
static Py_ssize_t
decode_span(const uint8_t *text, Py_ssize_t p, Py_ssize_t e, Py_ssize_t h, Out out, Py_ssize_t span_w,
            Out head_out, Py_ssize_t hw, uint8_t *digits, Py_ssize_t *width_io, int trust_width)
{
    Py_ssize_t k = 0, n = 0, width = *width_io;
    uint64_t flags = 0;
    int data_seen = 0, bad = 0;
    while (p < e) {
        uint8_t c = text[p];
        if (c == 'X') {
            if (p + 1 >= e || text[p + 1] != ' ') {
                *width_io = width;
                return -1;
            }
            Py_ssize_t q = p + 2;
            Py_ssize_t stop = q + width;
            if (trust_width && stop + 1 < e && text[stop] == '\n' && text[stop + 1] == 'X') {
                p = stop + 1;
            } else {
                stop = line_end(text, q, e);
                p = stop + 1;
                if (stop > q && text[stop - 1] == '\r')
                    stop -= 1;
                if ((stop - q) & 1) {
                    *width_io = width;
                    return -1;
                }
                width = stop - q;
            }
            if (n + stop - q <= DIGIT_BLOCK)
                n = gather(digits, n, text, q, stop);
            else
                n = gather_past_block(digits, n, text, q, stop, &k, h, out, span_w, head_out, hw, &flags, &bad);
            if (bad)
                return OUT_OF_BOUNDS;
            data_seen = 1;
        } else if (c == '\n') {
            p += 1;
        } else if (c == '\r' && p + 1 < e && text[p + 1] == '\n') {
            p += 2;
        } else if (c == '*' || ((c == 'A' || c == 'N') && !data_seen)) {
            p = line_end(text, p, e) + 1;
        } else {
            *width_io = width;
            return -1;
        }
    }
    flags |= decode_payload_bytes(digits, n, k, h, out, span_w, head_out, hw, &bad);
    if (bad)
        return OUT_OF_BOUNDS;
    k += n >> 1;
    *width_io = width;
    if (flags || !data_seen)
        return -1;
    return k;
}

static PyObject *
decode_spans(PyObject *self, PyObject *args)
{
    PyObject *objs[7];
    Py_ssize_t first, w, hw;
    if (!PyArg_ParseTuple(args, "OOOOnOnOnO:decode_spans", &objs[0], &objs[1], &objs[2], &objs[3], &first,
                          &objs[4], &w, &objs[5], &hw, &objs[6]))
        return NULL;
    static const ArraySpec specs[7] = {
        {"text", ANY_UINT, 1, 0, 0}, {"starts", ANY_INT, 8, 0, 0}, {"ends", ANY_INT, 8, 0, 0},
        {"heads", ANY_INT, 8, 0, 0}, {"out", ANY_UINT, 1, 0, 1}, {"head_out", ANY_UINT, 1, 0, 1},
        {"lengths", ANY_INT, 8, 0, 1},
    };
    Py_buffer v[7];
    if (take_all(objs, v, specs, 7) < 0)
        return NULL;
    const uint8_t *text = v[0].buf;
    const int64_t *starts = v[1].buf, *ends = v[2].buf, *heads = v[3].buf;
    int64_t *lengths = v[6].buf;
    Py_ssize_t spans = items(&v[1]);
    if (items(&v[2]) < spans || items(&v[3]) < spans || items(&v[6]) < spans || first < 0) {
        release(v, 7);
        return PyErr_Format(PyExc_ValueError, "decode_spans: ends, heads and lengths need %zd items each", spans);
    }
    if (w < 0 || w > v[4].len || hw < 0 || hw > v[5].len) {
        release(v, 7);
        return PyErr_Format(PyExc_ValueError, "decode_spans: w %zd or hw %zd lies outside out (%zd bytes) or "
                            "head_out (%zd bytes)", w, hw, v[4].len, v[5].len);
    }
    /* Each span's head has its slots in head_out (the caller reserves them): checked here, so that
       no sum of heads, however large they claim to be, overflows (undefined behaviour in C, which
       UBSan found with heads near 2**63). */
    Py_ssize_t head_room = v[5].len - hw;
    for (Py_ssize_t s = first; s < spans; s++) {
        if (starts[s] < 0 || ends[s] < starts[s] || ends[s] > v[0].len || heads[s] < 0 || heads[s] > head_room) {
            release(v, 7);
            return PyErr_Format(PyExc_ValueError, "decode_spans: span %zd [%lld:%lld) lies outside a text of %zd "
                                "bytes, or its head of %lld bytes outside head_out", s, (long long)starts[s],
                                (long long)ends[s], v[0].len, (long long)heads[s]);
        }
        head_room -= heads[s];
    }
    uint8_t *digits = digit_block(v, 7);
    if (digits == NULL)
        return NULL;
    Out out = {v[4].buf, v[4].len}, head_out = {v[5].buf, v[5].len};
    Py_ssize_t s = first, width = 0, failed = spans;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; s < spans; s++) {
        Py_ssize_t p = starts[s], e = ends[s], h = heads[s];
        Py_ssize_t length = decode_span(text, p, e, h, out, w, head_out, hw, digits, &width, 1);
        if (length == -1)
            length = decode_span(text, p, e, h, out, w, head_out, hw, digits, &width, 0);
        if (length == OUT_OF_BOUNDS) {
            bad = 1;
            break;
        }
        if (length < 0) {
            failed = s;
            break;
        }
        lengths[s] = length;
        w += length - h > 0 ? length - h : 0;
        hw += h;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(digits);
    release(v, 7);
    if (bad)
        return PyErr_Format(PyExc_ValueError, "decode_spans: span %zd does not fit out (%zd bytes from %zd) or "
                            "head_out (%zd from %zd)", s, out.size, w, head_out.size, hw);
    return Py_BuildValue("nnn", failed, w, hw);
}

/* ---- character fields (arrow/strings.py) -------------------------------------------------- */

/* UTF-8 as a shift DFA (Unicode table 3-7, as strings._UTF8_LEAD_BYTES): a state is a bit offset,
   and the state after byte b in state s is (utf8_dfa[b] >> s) & 63. One shift and one mask a byte
   and no branch, so a value's non-ASCII characters cost no mispredicted branches. REJECT keeps. */
enum {
    UTF8_ACCEPT = 0, UTF8_REJECT = 6, UTF8_ONE_MORE = 12, UTF8_TWO_MORE = 18, UTF8_THREE_MORE = 24,
    UTF8_AFTER_E0 = 30, UTF8_AFTER_ED = 36, UTF8_AFTER_F0 = 42, UTF8_AFTER_F4 = 48
};
static uint64_t utf8_dfa[256];

static int
utf8_next(int state, int b)
{
    int continuation = b >= 0x80 && b <= 0xBF;
    switch (state) {
    case UTF8_ACCEPT:
        if (b < 0x80)
            return UTF8_ACCEPT;
        if (b >= 0xC2 && b <= 0xDF)
            return UTF8_ONE_MORE;
        if (b == 0xE0)
            return UTF8_AFTER_E0;
        if (b == 0xED)
            return UTF8_AFTER_ED;
        if (b >= 0xE1 && b <= 0xEF)
            return UTF8_TWO_MORE;
        if (b == 0xF0)
            return UTF8_AFTER_F0;
        if (b == 0xF4)
            return UTF8_AFTER_F4;
        if (b >= 0xF1 && b <= 0xF3)
            return UTF8_THREE_MORE;
        return UTF8_REJECT;
    case UTF8_ONE_MORE: return continuation ? UTF8_ACCEPT : UTF8_REJECT;
    case UTF8_TWO_MORE: return continuation ? UTF8_ONE_MORE : UTF8_REJECT;
    case UTF8_THREE_MORE: return continuation ? UTF8_TWO_MORE : UTF8_REJECT;
    case UTF8_AFTER_E0: return b >= 0xA0 && b <= 0xBF ? UTF8_ONE_MORE : UTF8_REJECT;
    case UTF8_AFTER_ED: return b >= 0x80 && b <= 0x9F ? UTF8_ONE_MORE : UTF8_REJECT;
    case UTF8_AFTER_F0: return b >= 0x90 && b <= 0xBF ? UTF8_TWO_MORE : UTF8_REJECT;
    case UTF8_AFTER_F4: return b >= 0x80 && b <= 0x8F ? UTF8_TWO_MORE : UTF8_REJECT;
    default: return UTF8_REJECT;
    }
}

static void
make_utf8_dfa(void)
{
    for (int b = 0; b < 256; b++) {
        uint64_t row = 0;
        for (int state = UTF8_ACCEPT; state <= UTF8_AFTER_F4; state += 6)
            row |= (uint64_t)utf8_next(state, b) << state;
        utf8_dfa[b] = row;
    }
}

#define HIGH_BITS 0x8080808080808080ULL
#define LOW_BITS 0x7F7F7F7F7F7F7F7FULL

static inline uint64_t
load_word(const uint8_t *at)
{
    uint64_t word;
    memcpy(&word, at, 8);
    return word;
}

/* Whether data[0:n] is well-formed UTF-8 (strings._well_formed_utf8), by the DFA. The state's bits
   past the low 6 are left as they come: x86's shift uses only the low 6 bits of its count, so
   ``& 63`` costs no instruction and a byte one shift (Per Vognsen's shift DFA). */
static inline int
well_formed_text(const uint8_t *data, Py_ssize_t n)
{
    uint64_t state = UTF8_ACCEPT;
    Py_ssize_t k = 0;
    for (; k < n; k++)
        state = utf8_dfa[data[k]] >> (state & 63);
    return (state & 63) == UTF8_ACCEPT;
}

#if defined(__SSE2__)
#define SHORT_TEXT 64

/* One pass over a field of at most SHORT_TEXT bytes, at[0:16 * chunks] readable (chunks * 16 >= width),
   in 16-byte blocks: the value's length (``kept_length``), the field's bytes copied to
   out[0:width] (none past it: the last ones by a store overlapping the one before, as memcpy
   does, without its call) and, with ``check``, whether the value is well-formed UTF-8 in
   *well_formed. Loads, trimming, copy and check in one pass, where three loops were: string_fields
   of the benchmark's four text fields from 0.067 to 0.058 s of CPU per million rows
   (bench/bench_row_kernels.py, alternating with the three loops' checkout).

   The check decides text of ASCII and 2-byte characters, most text in Latin scripts, without a
   branch on its bytes: one bit a byte for the bytes >= 0x80, the continuation bytes (0x80-0xBF)
   and the leads of 2-byte characters (0xC2-0xDF; 0xC0 and 0xC1 only start overlong forms). It is
   well formed when every byte >= 0x80 is one of the two and each lead is followed by a
   continuation byte and each continuation byte follows a lead. Anything else (3- and 4-byte
   characters, errors) goes through the DFA. ``blanks``: the blank in every byte, zero when the
   blank is no byte (only NULs trimmed then). */
static inline Py_ssize_t
short_field(const uint8_t *restrict at, Py_ssize_t width, Py_ssize_t chunks, __m128i blanks, uint8_t *restrict out,
            int check, int *well_formed)
{
    uint64_t trimmed = 0, high = 0, continuation = 0, lead = 0;
    const __m128i zero = _mm_setzero_si128();
    const __m128i below_lead = _mm_set1_epi8(-64), above_c1 = _mm_set1_epi8(-63), below_e0 = _mm_set1_epi8(-32);
    for (Py_ssize_t s = 0; s < chunks; s++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(at + 16 * s));  /* bytes as signed: 0x80 is -128 */
        unsigned shift = 16 * (unsigned)s;
        trimmed |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, blanks),
                                                                      _mm_cmpeq_epi8(x, zero))) << shift;
        high |= (uint64_t)(uint32_t)_mm_movemask_epi8(x) << shift;
        continuation |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmplt_epi8(x, below_lead)) << shift;
        lead |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(x, above_c1),
                                                                    _mm_cmplt_epi8(x, below_e0))) << shift;
        if (16 * s + 16 <= width)
            _mm_storeu_si128((__m128i *)(out + 16 * s), x);
    }
    /* the bytes of the field past its last whole block of 16 */
    Py_ssize_t tail = width & 15, done = width - tail;
    if (tail) {
        if (done) {
            _mm_storeu_si128((__m128i *)(out + width - 16), _mm_loadu_si128((const __m128i *)(at + width - 16)));
        } else if (tail >= 8) {
            memcpy(out, at, 8);
            memcpy(out + tail - 8, at + tail - 8, 8);
        } else if (tail >= 4) {
            memcpy(out, at, 4);
            memcpy(out + tail - 4, at + tail - 4, 4);
        } else {
            out[0] = at[0];
            out[tail - 1] = at[tail - 1];
            out[tail / 2] = at[tail / 2];
        }
    }
    uint64_t field = width == 64 ? ~0ULL : (1ULL << width) - 1;
    uint64_t kept = ~trimmed & field;
    Py_ssize_t n = kept ? 64 - __builtin_clzll(kept) : 0;
    if (check) {
        uint64_t value = n == 64 ? ~0ULL : (1ULL << n) - 1;
        high &= value;
        continuation &= value;
        lead &= value;
        *well_formed = !high || (high == (continuation | lead) && (lead << 1) == continuation && !((lead >> (n - 1)) & 1))
                       || well_formed_text(at, n);
    }
    return n;
}
#endif

/* at[0:width] without its trailing blanks and NULs: its length. From the end, 8 bytes compared at
   a time (``blanks``: the blank in every byte); the last byte kept is the highest byte of the
   word that is neither. */
static inline Py_ssize_t
kept_length(const uint8_t *at, Py_ssize_t width, int blank, uint64_t blanks)
{
    Py_ssize_t n = width;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; n >= 8; n -= 8) {
        uint64_t word = load_word(at + n - 8), other = word ^ blanks;
        /* 0x80 in each byte that is not 0 (exact: no carry crosses a byte) */
        uint64_t not_nul = (((word & LOW_BITS) + LOW_BITS) | word) & HIGH_BITS;
        uint64_t not_blank = (((other & LOW_BITS) + LOW_BITS) | other) & HIGH_BITS;
        uint64_t kept = not_nul & not_blank;
        if (kept)
            return n - 8 + (63 - __builtin_clzll(kept)) / 8 + 1;
    }
#endif
    while (n > 0 && (at[n - 1] == blank || at[n - 1] == 0))
        n--;
    return n;
}

/* strings._trim_and_gather's loops, the arrays apart (restrict: the compiler need not reload the
   field table after each byte written). */
FOR_THIS_MACHINE static void
trim_and_gather_rows(const uint8_t *restrict flat, Py_ssize_t stride, Py_ssize_t count,
                     const int64_t *restrict offsets, const int64_t *restrict widths, Py_ssize_t fields, int blank,
                     const uint8_t *restrict utf8_bytes, Py_ssize_t table_width,
                     const int64_t *restrict utf8_length, int check_utf8, int64_t *restrict ends,
                     Py_ssize_t ends_width, uint8_t *restrict out, const int64_t *restrict regions,
                     int64_t *restrict bad_rows)
{
    /* A blank outside 0-255 matches no byte: only NULs are trimmed, as by a NUL blank. */
    uint64_t blanks = blank >= 0 && blank < 256 ? (uint64_t)blank * 0x0101010101010101ULL : 0;
#if defined(__SSE2__)
    const __m128i blanks16 = _mm_set1_epi8((char)(blanks & 0xFF));
#endif
    for (Py_ssize_t j = 0; j < fields; j++) {
        ends[j * ends_width] = 0;
        bad_rows[j] = -1;
    }
    Py_ssize_t rows_length = count * stride;  /* what short_field's 16-byte blocks may read past a field */
    for (Py_ssize_t i = 0; i < count; i++) {
        const uint8_t *row = flat + i * stride;
        for (Py_ssize_t j = 0; j < fields; j++) {
            const uint8_t *at = row + offsets[j];
            Py_ssize_t width = widths[j];
            int64_t *field_ends = ends + j * ends_width;
            uint8_t *start = out + regions[j];
            uint8_t *value = start + field_ends[i], *end = value;
#if defined(__SSE2__)
            Py_ssize_t chunks = (width + 15) / 16;
            if (utf8_bytes == NULL && width <= SHORT_TEXT && (at - flat) + 16 * chunks <= rows_length) {
                int well_formed = 1, check = check_utf8 && bad_rows[j] < 0;
                end += short_field(at, width, chunks, blanks16, end, check, &well_formed);
                if (!well_formed)
                    bad_rows[j] = i;
                field_ends[i + 1] = end - start;
                continue;
            }
#endif
            Py_ssize_t n = kept_length(at, width, blank, blanks);
            if (utf8_bytes != NULL) {
                for (Py_ssize_t k = 0; k < n; k++) {
                    uint8_t b = at[k];
                    int64_t size = utf8_length[b];
                    for (int64_t m = 0; m < size; m++)
                        end[m] = utf8_bytes[b * table_width + m];
                    end += size;
                }
            } else {
                /* The whole field copied (the blanks past the value are overwritten by the next one). */
                memcpy(end, at, (size_t)width);
                end += n;
            }
            /* Checked while the value is in the cache: no second pass. Untranslated, it is read where it
               came from (a byte load from what memcpy has just stored would wait for the store). */
            if (check_utf8 && bad_rows[j] < 0) {
                int well_formed;
                well_formed = utf8_bytes == NULL ? well_formed_text(at, n) : well_formed_text(value, end - value);
                if (!well_formed)
                    bad_rows[j] = i;
            }
            field_ends[i + 1] = end - start;
        }
    }
}

static PyObject *
trim_and_gather(PyObject *self, PyObject *args)
{
    PyObject *objs[9];
    Py_ssize_t stride, count, blank;
    int check_utf8;
    if (!PyArg_ParseTuple(args, "OnnOOnOOpOOOO:trim_and_gather", &objs[0], &stride, &count, &objs[1], &objs[2],
                          &blank, &objs[3], &objs[4], &check_utf8, &objs[5], &objs[6], &objs[7], &objs[8]))
        return NULL;
    static const ArraySpec specs[9] = {
        {"flat", ANY_UINT, 1, 0, 0}, {"offsets", ANY_INT, 8, 1, 0}, {"widths", ANY_INT, 8, 1, 0},
        {"utf8_bytes", ANY_UINT, 1, 2, 0}, {"utf8_length", ANY_INT, 8, 1, 0}, {"ends", ANY_INT, 8, 2, 1},
        {"out", ANY_UINT, 1, 0, 1}, {"regions", ANY_INT, 8, 1, 0}, {"bad_rows", ANY_INT, 8, 1, 1},
    };
    Py_buffer v[9];
    if (take_all(objs, v, specs, 9) < 0)
        return NULL;
    const uint8_t *flat = v[0].buf, *utf8_bytes = v[3].buf;
    const int64_t *offsets = v[1].buf, *widths = v[2].buf, *utf8_length = v[4].buf, *regions = v[7].buf;
    int64_t *ends = v[5].buf, *bad_rows = v[8].buf;
    uint8_t *out = v[6].buf;
    Py_ssize_t fields = items(&v[1]), table_width = columns_of(&v[3]), ends_width = columns_of(&v[5]);
    int translate = items(&v[4]) > 0;
    const char *problem = NULL;
    if (items(&v[2]) != fields || rows_of(&v[5]) < fields || items(&v[7]) < fields || items(&v[8]) < fields
        || count < 0 || stride < 0 || ends_width < count + 1 || (count && stride > v[0].len / count))
        problem = "sizes do not match";
    else if (translate && (items(&v[4]) < 256 || rows_of(&v[3]) < 256))
        problem = "the code page table has fewer than 256 entries";
    for (Py_ssize_t b = 0; translate && !problem && b < 256; b++)
        if (utf8_length[b] < 0 || utf8_length[b] > table_width)
            problem = "a code page entry is longer than the table";
    for (Py_ssize_t j = 0; !problem && j < fields; j++) {
        Py_ssize_t room = translate ? table_width : 1;
        if (offsets[j] < 0 || widths[j] < 0 || widths[j] > stride - offsets[j] || regions[j] < 0
            || (count && widths[j] > (v[6].len / room) / count)
            || regions[j] > v[6].len - count * widths[j] * room)
            problem = "a field lies outside the rows or its region outside out";
    }
    if (problem) {
        release(v, 9);
        return PyErr_Format(PyExc_ValueError, "trim_and_gather: %s", problem);
    }
    Py_BEGIN_ALLOW_THREADS
    trim_and_gather_rows(flat, stride, count, offsets, widths, fields, (int)blank, translate ? utf8_bytes : NULL,
                         table_width, utf8_length, check_utf8, ends, ends_width, out, regions, bad_rows);
    Py_END_ALLOW_THREADS
    release(v, 9);
    Py_RETURN_NONE;
}

/* ---- SAS numbers (payload/sas_numbers.py) -------------------------------------------------- */

#define EXPONENT_BITS 0x7FF0000000000000ULL
#define MANTISSA_BITS 0x000FFFFFFFFFFFFFULL

/* sas_numbers._gather_fields's loops, the arrays apart (restrict, as ``trim_and_gather_rows``). */
FOR_THIS_MACHINE static void
gather_field_rows(const uint8_t *restrict flat, Py_ssize_t stride, Py_ssize_t count,
                  const int64_t *restrict offsets, const int64_t *restrict widths, Py_ssize_t fields,
                  int little_endian, uint64_t *restrict bits, Py_ssize_t bits_width, uint8_t *restrict nan,
                  Py_ssize_t nan_width)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        const uint8_t *row = flat + i * stride;
        for (Py_ssize_t j = 0; j < fields; j++) {
            const uint8_t *at = row + offsets[j];
            Py_ssize_t width = widths[j];
            uint64_t value = 0;
            if (width == 8) {  /* most SAS numerics: one load, byte-swapped when not in the machine's order */
                memcpy(&value, at, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                if (!little_endian)
                    value = __builtin_bswap64(value);
#else
                if (little_endian)
                    value = __builtin_bswap64(value);
#endif
            } else if (little_endian) {
                unsigned shift = 8 * (8 - (unsigned)width);
                for (Py_ssize_t k = 0; k < width; k++, shift += 8)
                    value |= (uint64_t)at[k] << shift;
            } else {
                unsigned shift = 56;
                for (Py_ssize_t k = 0; k < width; k++, shift -= 8)
                    value |= (uint64_t)at[k] << shift;
            }
            bits[j * bits_width + i] = value;
            nan[j * nan_width + i] = (value & EXPONENT_BITS) == EXPONENT_BITS && (value & MANTISSA_BITS) != 0;
        }
    }
}

static PyObject *
gather_fields(PyObject *self, PyObject *args)
{
    PyObject *objs[5];
    Py_ssize_t stride, count;
    int little_endian;
    if (!PyArg_ParseTuple(args, "OnnOOpOO:gather_fields", &objs[0], &stride, &count, &objs[1], &objs[2],
                          &little_endian, &objs[3], &objs[4]))
        return NULL;
    static const ArraySpec specs[5] = {
        {"flat", ANY_UINT, 1, 0, 0}, {"offsets", ANY_INT, 8, 1, 0}, {"widths", ANY_INT, 8, 1, 0},
        {"bits", ANY_UINT, 8, 2, 1}, {"nan", BOOL, 1, 2, 1},
    };
    Py_buffer v[5];
    if (take_all(objs, v, specs, 5) < 0)
        return NULL;
    const uint8_t *flat = v[0].buf;
    const int64_t *offsets = v[1].buf, *widths = v[2].buf;
    uint64_t *bits = v[3].buf;
    uint8_t *nan = v[4].buf;
    Py_ssize_t fields = items(&v[1]), bits_width = columns_of(&v[3]), nan_width = columns_of(&v[4]);
    const char *problem = NULL;
    if (items(&v[2]) != fields || rows_of(&v[3]) < fields || rows_of(&v[4]) < fields || bits_width < count
        || nan_width < count || count < 0 || stride < 0 || (count && stride > v[0].len / count))
        problem = "sizes do not match";
    for (Py_ssize_t j = 0; !problem && j < fields; j++)
        if (offsets[j] < 0 || widths[j] < 0 || widths[j] > 8 || widths[j] > stride - offsets[j])
            problem = "a field lies outside the rows or is longer than 8 bytes";
    if (problem) {
        release(v, 5);
        return PyErr_Format(PyExc_ValueError, "gather_fields: %s", problem);
    }
    Py_BEGIN_ALLOW_THREADS
    gather_field_rows(flat, stride, count, offsets, widths, fields, little_endian, bits, bits_width, nan, nan_width);
    Py_END_ALLOW_THREADS
    release(v, 5);
    Py_RETURN_NONE;
}

/* ---- SAS dates and times (payload/sas_dataset.py) ------------------------------------------- */

/* Whole seconds and their fraction in microseconds apart, as the numba kernel computes them:
   v * 1e6 would shift the microsecond of late datetimes. */
static inline int64_t
microseconds(double v)
{
    double whole = floor(v);
    return (int64_t)((uint64_t)(int64_t)whole * 1000000u + (uint64_t)(int64_t)rint((v - whole) * 1e6));
}

typedef struct {
    double min_sas_day, max_sas_day, per_day, max_interval_seconds;
    int64_t epoch_shift_days, epoch_shift_seconds, last_nanosecond_of_day;
} TimeConstants;

/* One loop per kind and output width, so that no branch on either runs per value: each value
   missing (0), out of range (its index returned) or converted. */
#define CONVERT(IN_RANGE, VALUE)                                                                     \
    do {                                                                                             \
        for (Py_ssize_t i = 0; i < n; i++) {                                                         \
            double x = values[i];                                                                    \
            if (missing[i]) {                                                                        \
                if (out32) out32[i] = 0; else out64[i] = 0;                                          \
                continue;                                                                            \
            }                                                                                        \
            if (!(IN_RANGE))                                                                         \
                return i;                                                                            \
            if (out32) out32[i] = (int32_t)(VALUE); else out64[i] = (VALUE);                         \
        }                                                                                            \
        return -1;                                                                                   \
    } while (0)

FOR_THIS_MACHINE static Py_ssize_t
convert_times(const double *restrict values, const uint8_t *restrict missing, Py_ssize_t n, Py_ssize_t kind,
              int32_t *restrict out32, int64_t *restrict out64, const TimeConstants *c)
{
    const double min_day = c->min_sas_day, max_day = c->max_sas_day, per_day = c->per_day;
    const double max_interval = c->max_interval_seconds;
    const int64_t shift_days = c->epoch_shift_days, shift_us = c->epoch_shift_seconds * 1000000;
    const int64_t last_ns = c->last_nanosecond_of_day;
    if (kind == 0)
        CONVERT(min_day <= x && x < max_day + 1, (int64_t)floor(x) - shift_days);
    if (kind == 1)
        CONVERT(min_day * per_day <= x && x < (max_day + 1) * per_day, microseconds(x) - shift_us);
    if (kind == 2)
        CONVERT(0 <= x && x < per_day, (int64_t)rint(x * 1e9) < last_ns ? (int64_t)rint(x * 1e9) : last_ns);
    CONVERT(-max_interval <= x && x <= max_interval, microseconds(x));
}

static PyObject *
sas_to_arrow_time(PyObject *self, PyObject *args)
{
    PyObject *objs[3];
    Py_ssize_t kind;
    /* The constants of sas_dataset.py, passed after the numba kernel's arguments (compiled.py's
       native_args), so that one place defines them. */
    long long min_day, max_day, epoch_shift_days, epoch_shift_seconds, seconds_per_day, last_nanosecond_of_day;
    double max_interval_seconds;
    if (!PyArg_ParseTuple(args, "OOnOLLLLLdL:sas_to_arrow_time", &objs[0], &objs[1], &kind, &objs[2], &min_day,
                          &max_day, &epoch_shift_days, &epoch_shift_seconds, &seconds_per_day,
                          &max_interval_seconds, &last_nanosecond_of_day))
        return NULL;
    static const ArraySpec specs[3] = {
        {"values", FLOAT, 8, 1, 0}, {"missing", BOOL, 1, 1, 0}, {"out", ANY_INT, 0, 1, 1},
    };
    Py_buffer v[3];
    if (take_all(objs, v, specs, 3) < 0)
        return NULL;
    const double *values = v[0].buf;
    const uint8_t *missing = v[1].buf;
    void *out = v[2].buf;
    Py_ssize_t n = items(&v[0]), itemsize = v[2].itemsize;
    if (items(&v[1]) < n || items(&v[2]) < n) {
        release(v, 3);
        return PyErr_Format(PyExc_ValueError, "sas_to_arrow_time: missing and out need %zd items", n);
    }
    Py_ssize_t bad = -1;
    const TimeConstants constants = {(double)min_day, (double)max_day, (double)seconds_per_day, max_interval_seconds,
                                     epoch_shift_days, epoch_shift_seconds, last_nanosecond_of_day};
    Py_BEGIN_ALLOW_THREADS
    bad = convert_times(values, missing, n, kind, itemsize == 4 ? out : NULL, itemsize == 4 ? NULL : out, &constants);
    Py_END_ALLOW_THREADS
    release(v, 3);
    return PyLong_FromSsize_t(bad);
}

/* ---- TIB/RV ATO messages (transports/tibrv/observations.py) ------------------------------- */

#define RV_SHORT 0x79
#define RV_LONG 0x7A
#define RV_INT 11
#define RV_REAL 13
#define RV_STRING 8
#define STRING_TAIL 64 /* a string's bytes copied as one block of this size, blanks blended in */

/* observations._field: 1 and the field's data start, size, type and end when the field at buf[p]
   lies before e (no more than the buffer's size); else 0. */
static inline int
rv_field(const uint8_t *buf, Py_ssize_t p, Py_ssize_t e, Py_ssize_t *at, Py_ssize_t *size, int *code,
         Py_ssize_t *next)
{
    if (p < 0 || p >= e)
        return 0;
    Py_ssize_t q = p + 1 + buf[p];
    if (q >= e)
        return 0;
    int c = buf[q++];
    if (q >= e)
        return 0;
    int64_t n = buf[q++];
    int scalar = c == 3 || c == 9 || c == 10 || c == 11 || c == 12 || c == 13;
    if (!scalar && c != 1 && n == RV_SHORT) {
        if (q + 2 > e)
            return 0;
        n = ((int64_t)buf[q] << 8 | buf[q + 1]) - 2;
        q += 2;
    } else if (!scalar && n == RV_LONG) {
        if (q + 4 > e)
            return 0;
        n = (int64_t)buf[q] << 24 | (int64_t)buf[q + 1] << 16 | (int64_t)buf[q + 2] << 8 | buf[q + 3];
        if (c != 1) {
            n -= 4;
            q += 4;
        }
    }
    if (n < 0 || n > e - q)
        return 0;
    *at = q;
    *size = (Py_ssize_t)n;
    *code = c;
    *next = q + (Py_ssize_t)n;
    return 1;
}

typedef struct {
    const int64_t *offsets, *lengths;
    const uint8_t *numeric;
    Py_ssize_t nvars, obs_length;
    uint8_t blank;
} RvLayout;

typedef struct {
    int64_t problem, row, variable, offset;
} RvOutcome;

/* A character value's n bytes at `from` (n <= width, n < 0x79) then blanks to `width`, at `to`.
   When the buffer holds STRING_TAIL bytes from `from`, they are loaded as one block and the
   blanks blended in by vector compares, with no branch on n: the values' lengths vary from row
   to row, which a loop of n bytes would mispredict each time. */
#if defined(__GNUC__)
typedef uint8_t Bytes32 __attribute__((vector_size(32)));
typedef uint8_t UnalignedBytes32 __attribute__((vector_size(32), aligned(1), may_alias));
static const Bytes32 BYTE_INDEX[2] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
     30, 31},
    {32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
     59, 60, 61, 62, 63}};
#endif

static inline void
put_string(uint8_t *restrict to, const uint8_t *restrict from, Py_ssize_t n, Py_ssize_t width, int whole_tail,
           uint8_t blank)
{
#if defined(__GNUC__)
    if (whole_tail && width <= STRING_TAIL) {
        Bytes32 block[2];
        for (int half = 0; half < 2; half++) {
            Bytes32 value = *(const UnalignedBytes32 *)(from + 32 * half);
            Bytes32 kept = (Bytes32)(BYTE_INDEX[half] < (uint8_t)n);  /* all ones where a byte of the value */
            block[half] = (value & kept) | (((Bytes32){0} + blank) & ~kept);
        }
        memcpy(to, block, (size_t)width);
        return;
    }
#else
    (void)whole_tail;
#endif
    if (n)  /* `from` may be the null pointer of an empty buffer: memcpy must not be given it */
        memcpy(to, from, (size_t)n);
    memset(to + n, blank, (size_t)(width - n));
}

static inline uint64_t
load64(const uint8_t *at)
{
    uint64_t value;
    memcpy(&value, at, 8);
    return value;
}

static inline uint16_t
load16(const uint8_t *at)
{
    uint16_t value;
    memcpy(&value, at, 2);
    return value;
}

/* Bytes in memory order as a little-endian load reads them. */
#define BYTES2(a, b) ((uint16_t)((a) | (b) << 8))
#define VTYPE_AND_NAME(vtype, name) \
    ((uint64_t)RV_INT | 4ULL << 8 | (uint64_t)(vtype) << 40 | (uint64_t)(name) << 48)
#define SEVEN_BYTES 0x00FFFFFFFFFFFFFFULL

/* One row of observations._usual_rows, from buf[p] (p >= 0): where the next row starts, or -1 when
   a field has another shape (what was written of the row is then written again, alike, by the
   field-by-field walk). A variable's vtype field from its type byte to the value field's name
   length is one 8-byte compare (the name's first byte masked off), a real's type and size one
   2-byte compare. */
static inline Py_ssize_t
rv_usual_row(const uint8_t *restrict buf, Py_ssize_t p, Py_ssize_t e, const RvLayout *L, Py_ssize_t name,
             uint8_t *restrict row)
{
    const uint64_t numeric_head = VTYPE_AND_NAME(1, name), character_head = VTYPE_AND_NAME(2, name);
    for (Py_ssize_t v = 0; v < L->nvars; v++) {
        const int numeric = L->numeric[v];
        Py_ssize_t q = p + 1 + name;  /* the vtype's type: an int of 4 bytes, 1 or 2 */
        if (q + 8 > e || buf[p] != name || (load64(buf + q) & SEVEN_BYTES) != (numeric ? numeric_head : character_head))
            return -1;
        q += 7 + name;  /* the value's type */
        uint8_t *to = row + L->offsets[v];
        const Py_ssize_t width = L->lengths[v];
        if (numeric) {
            if (q + 10 > e || load16(buf + q) != BYTES2(RV_REAL, 8))
                return -1;
            if (width == 8)
                memcpy(to, buf + q + 2, 8);
            else
                memcpy(to, buf + q + 2, (size_t)width);
            p = q + 10;
        } else {
            if (q + 2 > e || buf[q] != RV_STRING)
                return -1;
            const Py_ssize_t size = buf[q + 1], at = q + 2;
            if (size >= RV_SHORT || at + size > e)
                return -1;
            const Py_ssize_t n = size - (size > 0 && buf[at + size - 1] == 0);
            if (n > width)
                return -1;
            put_string(to, buf + at, n, width, at + STRING_TAIL <= e, L->blank);
            p = at + size;
        }
    }
    return p;
}

/* observations._usual_rows: the leading rows whose fields all have the usual shape, each field's
   place known before its bytes are read. Returns the rows written; *pp moves past them. Only on
   little-endian machines (the compares above read bytes in that order); elsewhere it reads no
   row and the field-by-field walk reads them all. */
FOR_THIS_MACHINE static Py_ssize_t
rv_usual_rows(const uint8_t *restrict buf, Py_ssize_t *pp, Py_ssize_t e, Py_ssize_t count, const RvLayout *L,
              uint8_t *restrict out, Py_ssize_t room)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    Py_ssize_t p = *pp;
    if ((L->obs_length > 0 && count > room / L->obs_length) || p < 0 || p >= e)
        return 0;
    for (Py_ssize_t v = 0; v < L->nvars; v++)
        if (L->offsets[v] < 0 || L->lengths[v] < 0 || L->offsets[v] > L->obs_length - L->lengths[v]
            || (L->numeric[v] && L->lengths[v] > 8))
            return 0;
    const Py_ssize_t name = buf[p];
    for (Py_ssize_t row = 0; row < count; row++) {
        Py_ssize_t next = rv_usual_row(buf, p, e, L, name, out + row * L->obs_length);
        if (next < 0) {
            *pp = p;
            return row;
        }
        p = next;
    }
    *pp = p;
    return count;
#else
    (void)buf, (void)pp, (void)e, (void)count, (void)L, (void)out, (void)room;
    return 0;
#endif
}

/* observations._rows: `count` rows from the fields at buf[p:e] into out[0:room]. */
static RvOutcome
rv_rows(const uint8_t *buf, Py_ssize_t size, Py_ssize_t p, Py_ssize_t e, Py_ssize_t count, const RvLayout *L,
        uint8_t *out, Py_ssize_t room)
{
    RvOutcome ok = {0, 0, 0, 0};
    if (e > size)
        e = size;
    /* No variables: a row reads no field and writes no byte, so the rows are not walked (a count
       of 2**62 would otherwise be a loop of 2**62 turns, unless the optimiser drops it). */
    Py_ssize_t first = L->nvars ? rv_usual_rows(buf, &p, e, count, L, out, room) : count;
    for (Py_ssize_t row = first; row < count; row++) {
        Py_ssize_t base = row * L->obs_length;
        for (Py_ssize_t v = 0; v < L->nvars; v++) {
            Py_ssize_t at, n, next;
            int code;
            if (!rv_field(buf, p, e, &at, &n, &code, &next))
                return (RvOutcome){1, row, v, p};
            if (code != RV_INT || n != 4)
                return (RvOutcome){2, row, v, p};
            int64_t vtype = (int64_t)buf[at] << 24 | (int64_t)buf[at + 1] << 16 | (int64_t)buf[at + 2] << 8
                            | buf[at + 3];
            if (vtype != (L->numeric[v] ? 1 : 2))
                return (RvOutcome){3, row, v, p};
            p = next;
            if (!rv_field(buf, p, e, &at, &n, &code, &next))
                return (RvOutcome){1, row, v, p};
            Py_ssize_t to = base + L->offsets[v], width = L->lengths[v];
            if (to < 0 || width < 0 || to > room - width)
                return (RvOutcome){8, row, v, p};
            if (L->numeric[v]) {
                if (code != RV_REAL || n != 8)
                    return (RvOutcome){4, row, v, p};
                if (width > n)
                    return (RvOutcome){8, row, v, p};
                memcpy(out + to, buf + at, (size_t)width);
            } else {
                if (code != RV_STRING)
                    return (RvOutcome){5, row, v, p};
                Py_ssize_t kept = n;
                if (kept > 0 && buf[at + kept - 1] == 0)
                    kept--;
                if (kept > width)
                    return (RvOutcome){6, row, v, p};
                memcpy(out + to, buf + at, (size_t)kept);
                memset(out + to + kept, L->blank, (size_t)(width - kept));
            }
            p = next;
        }
    }
    if (p != e)
        return (RvOutcome){7, count, 0, p};
    return ok;
}

static PyObject *
ato_rows(PyObject *self, PyObject *args)
{
    PyObject *objs[9];
    Py_ssize_t obs_length, blank;
    if (!PyArg_ParseTuple(args, "OOOOOOOOnOn:ato_rows", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &obs_length, &objs[8], &blank))
        return NULL;
    static const ArraySpec specs[9] = {
        {"buf", ANY_UINT, 1, 0, 0}, {"starts", ANY_INT, 8, 1, 0}, {"ends", ANY_INT, 8, 1, 0},
        {"counts", ANY_INT, 8, 1, 0}, {"out_starts", ANY_INT, 8, 1, 0}, {"numeric", BOOL, 1, 1, 0},
        {"lengths", ANY_INT, 8, 1, 0}, {"offsets", ANY_INT, 8, 1, 0}, {"out", ANY_UINT, 1, 0, 1},
    };
    Py_buffer v[9];
    if (take_all(objs, v, specs, 9) < 0)
        return NULL;
    const int64_t *starts = v[1].buf, *ends = v[2].buf, *counts = v[3].buf, *out_starts = v[4].buf;
    Py_ssize_t messages = items(&v[1]);
    RvLayout layout = {v[7].buf, v[6].buf, v[5].buf, items(&v[6]), obs_length, (uint8_t)blank};
    if (items(&v[2]) != messages || items(&v[3]) != messages || items(&v[4]) != messages
        || items(&v[5]) != layout.nvars || items(&v[7]) != layout.nvars) {
        release(v, 9);
        return PyErr_Format(PyExc_ValueError, "ato_rows: sizes do not match");
    }
    const uint8_t *buf = v[0].buf;
    uint8_t *out = v[8].buf;
    Py_ssize_t size = v[0].len, room = v[8].len;
    /* The row loops take buf and out as restrict pointers: rows written over the bytes being read
       would be undefined behaviour, not merely other bytes. */
    if (overlap(buf, size, out, room)) {
        release(v, 9);
        return PyErr_Format(PyExc_ValueError, "ato_rows: out overlaps buf");
    }
    if (blank < 0 || blank > 255) {
        release(v, 9);
        return PyErr_Format(PyExc_ValueError, "ato_rows: blank %zd is not a byte", blank);
    }
    RvOutcome outcome = {0, 0, 0, 0};
    Py_ssize_t failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t m = 0; m < messages; m++) {
        Py_ssize_t count = counts[m], at = out_starts[m];
        if (count < 0 || obs_length < 0 || at < 0 || at > room || (obs_length > 0 && count > (room - at) / obs_length)) {
            outcome = (RvOutcome){8, 0, 0, starts[m]};
        } else {
            Py_ssize_t rows = count * obs_length;
            outcome = rv_rows(buf, size, starts[m], ends[m], count, &layout, out + at, rows);
        }
        if (outcome.problem) {
            failed = m;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    release(v, 9);
    return Py_BuildValue("LnLLL", (long long)outcome.problem, failed, (long long)outcome.row,
                         (long long)outcome.variable, (long long)outcome.offset);
}

/* ---- the write's kernels: X lines, SAS numerics and blank-padded text into rows ---------------- */

#define HEX_BLOCK 8192  /* payload bytes whose digits are made at a time: their 16 KiB stay in the L1/L2 cache */
#define LINE_COPY 64     /* a short line's digits are copied as one block of this size */

/* The digits of in[0:n) into to[0:2n): arithmetic when `digits` are 0-9 then six consecutive letters
   (dmpmqmsg's upper case: a loop the compiler vectorises), else from a table of 256 pairs. */
FOR_THIS_MACHINE static void
hex_digits(const uint8_t *restrict in, Py_ssize_t n, uint8_t *restrict to, const uint8_t *restrict digits)
{
    int arithmetic = 1;
    for (int k = 0; k < 16; k++)
        arithmetic &= digits[k] == (k < 10 ? '0' + k : digits[10] + k - 10);
    if (arithmetic) {
        const uint8_t past_nine = (uint8_t)(digits[10] - '0' - 10);
        for (Py_ssize_t i = 0; i < n; i++) {
            uint8_t high = in[i] >> 4, low = in[i] & 15;
            to[2 * i] = (uint8_t)(high + '0' + (high > 9 ? past_nine : 0));
            to[2 * i + 1] = (uint8_t)(low + '0' + (low > 9 ? past_nine : 0));
        }
        return;
    }
    uint8_t pairs[256][2];
    for (int b = 0; b < 256; b++) {
        pairs[b][0] = digits[b >> 4];
        pairs[b][1] = digits[b & 15];
    }
    for (Py_ssize_t i = 0; i < n; i++)
        memcpy(to + 2 * i, pairs[in[i]], 2);
}

/* hex_lines._x_lines: "X ", the digits of each `width` payload bytes (digits[] the 16 digits) and a
   line end, into out (room for them checked by the caller: 3 bytes a line, 2 a payload byte).
   A dmpmqmsg line holds 25 bytes, too few for a vectorised loop of its own: the digits of many
   lines are made at once (hex_digits), then each line's are copied to its place, a short line's as
   one block of LINE_COPY bytes where the lines after it write over what it adds. Returns the bytes
   written. */
FOR_THIS_MACHINE static Py_ssize_t
x_lines_of(const uint8_t *restrict payload, Py_ssize_t n, Py_ssize_t width, uint8_t *restrict out,
           const uint8_t *restrict digits)
{
    uint8_t block[2 * HEX_BLOCK];
    const Py_ssize_t total = 2 * n + 3 * (n / width + (n % width != 0));
    uint8_t *w = out;
    if (width > HEX_BLOCK / 2) {  /* long lines: their own loops vectorise */
        for (Py_ssize_t start = 0; start < n; start += width) {
            Py_ssize_t size = n - start < width ? n - start : width;
            *w++ = 'X';
            *w++ = ' ';
            hex_digits(payload + start, size, w, digits);
            w += 2 * size;
            *w++ = '\n';
        }
        return w - out;
    }
    const Py_ssize_t per_block = HEX_BLOCK / width * width;
    for (Py_ssize_t first = 0; first < n; first += per_block) {
        Py_ssize_t in_block = n - first < per_block ? n - first : per_block;
        hex_digits(payload + first, in_block, block, digits);
        /* What a last short line's block copy takes past the digits: defined bytes (the lines
           after it overwrite them in out), so no copy ever reads uninitialised memory. */
        Py_ssize_t tail = 2 * HEX_BLOCK - 2 * in_block < LINE_COPY ? 2 * HEX_BLOCK - 2 * in_block : LINE_COPY;
        memset(block + 2 * in_block, 0, (size_t)tail);
        for (Py_ssize_t start = 0; start < in_block; start += width) {
            Py_ssize_t size = in_block - start < width ? in_block - start : width;
            w[0] = 'X';
            w[1] = ' ';
            if (2 * size <= LINE_COPY && (w - out) + 2 + LINE_COPY <= total
                && 2 * start + LINE_COPY <= 2 * HEX_BLOCK)
                memcpy(w + 2, block + 2 * start, LINE_COPY);
            else
                memcpy(w + 2, block + 2 * start, (size_t)(2 * size));
            w += 2 + 2 * size;
            *w++ = '\n';
        }
    }
    return w - out;
}

static PyObject *
x_lines(PyObject *self, PyObject *args)
{
    PyObject *objs[3];
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OnOO:x_lines", &objs[0], &width, &objs[1], &objs[2]))
        return NULL;
    static const ArraySpec specs[3] = {
        {"payload", ANY_UINT, 1, 0, 0}, {"out", ANY_UINT, 1, 0, 1}, {"digits", ANY_UINT, 1, 0, 0},
    };
    Py_buffer v[3];
    if (take_all(objs, v, specs, 3) < 0)
        return NULL;
    Py_ssize_t n = v[0].len, room = v[1].len;
    /* 3 bytes a line and 2 a payload byte, checked without overflow: lines <= n, so 3 * lines + 2 * n
       needs only n <= room / 5 to be computed. */
    const char *problem = width < 1 ? "the width must be at least 1 byte"
                          : v[2].len < 16 ? "digits must hold 16 digits"
                          : n > room / 2 || 2 * n + 3 * (n / width + (n % width != 0)) > room
                              ? "out is too small for the lines" : NULL;
    if (problem) {
        release(v, 3);
        return PyErr_Format(PyExc_ValueError, "x_lines: %s (%zd payload bytes, width %zd, out of %zd)", problem, n,
                            width, room);
    }
    Py_ssize_t written;
    Py_BEGIN_ALLOW_THREADS
    written = x_lines_of(v[0].buf, n, width, v[1].buf, v[2].buf);
    Py_END_ALLOW_THREADS
    release(v, 3);
    return PyLong_FromSsize_t(written);
}

/* hex_lines._x_records: records end to end, each a head (the text before a message's data lines)
   copied from heads, then the X lines of its payload (x_lines_of), or a bare "X " line for an empty
   one, then an empty line (dmpmqmsg's after each message). head_ends and payload_ends (int64) say
   where each record's head and payload end in heads and payloads; the ends must rise from 0 within their buffers and out must hold every record, which is
   all checked before a byte is written. Returns the bytes written. One call formats a whole group of
   a dump's messages without the GIL: no per-message buffers, copies or joins. */
static PyObject *
x_records(PyObject *self, PyObject *args)
{
    PyObject *objs[6];
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OOOOnOO:x_records", &objs[0], &objs[1], &objs[2], &objs[3], &width, &objs[4],
                          &objs[5]))
        return NULL;
    static const ArraySpec specs[6] = {
        {"heads", ANY_UINT, 1, 0, 0}, {"head_ends", ANY_INT, 8, 1, 0}, {"payloads", ANY_UINT, 1, 0, 0},
        {"payload_ends", ANY_INT, 8, 1, 0}, {"out", ANY_UINT, 1, 0, 1}, {"digits", ANY_UINT, 1, 0, 0},
    };
    Py_buffer v[6];
    if (take_all(objs, v, specs, 6) < 0)
        return NULL;
    const int64_t *head_ends = v[1].buf, *payload_ends = v[3].buf;
    const Py_ssize_t count = items(&v[1]), heads_size = v[0].len, payloads_size = v[2].len, room = v[4].len;
    const char *problem = width < 1 ? "the width must be at least 1 byte"
                          : v[5].len < 16 ? "digits must hold 16 digits"
                          : items(&v[3]) != count ? "head_ends and payload_ends differ in length" : NULL;
    /* What the records need, each end checked before it is used: every term is at most a buffer's
       size (or 4 a record), so the sum cannot overflow before it passes room. */
    Py_ssize_t need = 0;
    int64_t head_start = 0, payload_start = 0;
    for (Py_ssize_t i = 0; !problem && i < count; i++) {
        int64_t head_end = head_ends[i], payload_end = payload_ends[i];
        if (head_end < head_start || head_end > heads_size || payload_end < payload_start
            || payload_end > payloads_size) {
            problem = "the ends do not rise within their buffers";
            break;
        }
        Py_ssize_t n = (Py_ssize_t)(payload_end - payload_start);
        Py_ssize_t lines = n / width + (n % width != 0);
        need += (Py_ssize_t)(head_end - head_start) + (n ? 2 * n + 3 * lines : 3) + 1;
        if (need > room)
            problem = "out is too small for the records";
        head_start = head_end;
        payload_start = payload_end;
    }
    if (problem) {
        release(v, 6);
        return PyErr_Format(PyExc_ValueError, "x_records: %s (%zd records, width %zd, out of %zd)", problem, count,
                            width, room);
    }
    uint8_t *w = v[4].buf;
    const uint8_t *heads = v[0].buf, *payloads = v[2].buf, *digits = v[5].buf;
    Py_BEGIN_ALLOW_THREADS
    head_start = payload_start = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        memcpy(w, heads + head_start, (size_t)(head_ends[i] - head_start));
        w += head_ends[i] - head_start;
        if (payload_ends[i] == payload_start) {
            memcpy(w, "X \n", 3);
            w += 3;
        } else {
            w += x_lines_of(payloads + payload_start, (Py_ssize_t)(payload_ends[i] - payload_start), width, w, digits);
        }
        *w++ = '\n';
        head_start = head_ends[i];
        payload_start = payload_ends[i];
    }
    Py_END_ALLOW_THREADS
    Py_ssize_t written = w - (uint8_t *)v[4].buf;
    release(v, 6);
    return PyLong_FromSsize_t(written);
}

/* Rows of `row_length` bytes end to end in a buffer of `size` bytes: whether `rows` of them lie in
   it and their bytes at..at + width - 1 inside each row. */
static int
columns_fit(Py_ssize_t rows, Py_ssize_t size, Py_ssize_t row_length, Py_ssize_t at, Py_ssize_t width)
{
    return rows >= 0 && row_length >= 0 && at >= 0 && width >= 0 && width <= row_length && at <= row_length - width
           && (rows == 0 || row_length <= size / rows);
}

/* One loop per width, so that each row's bytes are one store of a size known when compiled. */
#define PUT_HIGH_BYTES(WIDTH)                                                                          \
    for (Py_ssize_t i = 0; i < n; i++) {                                                               \
        uint64_t b = bits[i];                                                                          \
        if (big_endian)                                                                                \
            b = __builtin_bswap64(b);                                                                  \
        else                                                                                           \
            b >>= 64 - 8 * (WIDTH);                                                                    \
        memcpy(flat + i * row_length, &b, (WIDTH));                                                    \
    }                                                                                                  \
    break

/* sas_numbers._put_high_bytes (flat already moved to the column's first byte). */
FOR_THIS_MACHINE static void
put_high_bytes_rows(const uint64_t *restrict bits, Py_ssize_t n, uint8_t *restrict flat, Py_ssize_t row_length,
                    Py_ssize_t width, int big_endian)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    switch (width) {
    case 1: PUT_HIGH_BYTES(1);
    case 2: PUT_HIGH_BYTES(2);
    case 3: PUT_HIGH_BYTES(3);
    case 4: PUT_HIGH_BYTES(4);
    case 5: PUT_HIGH_BYTES(5);
    case 6: PUT_HIGH_BYTES(6);
    case 7: PUT_HIGH_BYTES(7);
    default: PUT_HIGH_BYTES(8);
    }
#else
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t b = bits[i];
        uint8_t *to = flat + i * row_length;
        for (Py_ssize_t k = 0; k < width; k++)
            to[k] = (uint8_t)(big_endian ? b >> (56 - 8 * k) : b >> (64 - 8 * width + 8 * k));
    }
#endif
}

static PyObject *
put_high_bytes(PyObject *self, PyObject *args)
{
    PyObject *objs[2];
    Py_ssize_t row_length, at, width;
    int big_endian;
    if (!PyArg_ParseTuple(args, "OOnnnp:put_high_bytes", &objs[0], &objs[1], &row_length, &at, &width, &big_endian))
        return NULL;
    static const ArraySpec specs[2] = {{"bits", ANY_UINT, 8, 1, 0}, {"flat", ANY_UINT, 1, 0, 1}};
    Py_buffer v[2];
    if (take_all(objs, v, specs, 2) < 0)
        return NULL;
    Py_ssize_t n = items(&v[0]);
    if (width < 1 || width > 8 || !columns_fit(n, v[1].len, row_length, at, width)) {
        release(v, 2);
        return PyErr_Format(PyExc_ValueError, "put_high_bytes: %zd numbers of %zd bytes (1 to 8) at %zd of rows of "
                            "%zd bytes do not fit in %zd bytes", n, width, at, row_length, v[1].len);
    }
    Py_BEGIN_ALLOW_THREADS
    put_high_bytes_rows(v[0].buf, n, (uint8_t *)v[1].buf + at, row_length, width, big_endian);
    Py_END_ALLOW_THREADS
    release(v, 2);
    Py_RETURN_NONE;
}

/* sas_numbers._put_arrow_numbers (flat already moved to the column's first byte), a block of values at a
   time: each value's double (an integer plus `add`, wrapping as numpy's int64 sums do, then divided by
   `divisor`) and its bits, "." for a NaN or a null, gathered, then placed by put_high_bytes_rows. */
#define NUMBER_BLOCK 256
#define ARROW_DOUBLES(TYPE, MAKE)                                                                      \
    for (Py_ssize_t i = 0; i < m; i++) {                                                               \
        TYPE v;                                                                                        \
        memcpy(&v, (const char *)values + (s + i) * sizeof(TYPE), sizeof(TYPE));                       \
        double x = (MAKE);                                                                             \
        if (divide)                                                                                    \
            x /= divisor;                                                                              \
        uint64_t b, nan = -(uint64_t)(x != x);                                                         \
        memcpy(&b, &x, 8);                                                                             \
        bits[i] = (b & ~nan) | (IEEE_MISSING_DOT & nan);                                               \
    }                                                                                                  \
    break

static const uint64_t IEEE_MISSING_DOT = 0xFFFFFE0000000000ULL;

FOR_THIS_MACHINE static void
put_arrow_numbers_rows(const void *restrict values, char type, Py_ssize_t n, const uint8_t *restrict validity,
                       Py_ssize_t validity_offset, int64_t add, double divisor, uint8_t *restrict flat,
                       Py_ssize_t row_length, Py_ssize_t width, int big_endian)
{
    uint64_t bits[NUMBER_BLOCK];
    int divide = divisor != 1.0;
    for (Py_ssize_t s = 0; s < n; s += NUMBER_BLOCK) {
        Py_ssize_t m = n - s < NUMBER_BLOCK ? n - s : NUMBER_BLOCK;
        switch (type) {
        case 'd': ARROW_DOUBLES(double, v);
        case 'f': ARROW_DOUBLES(float, (double)v);
        case 'i': ARROW_DOUBLES(int32_t, (double)(int64_t)((uint64_t)(int64_t)v + (uint64_t)add));
        default: ARROW_DOUBLES(int64_t, (double)(int64_t)((uint64_t)v + (uint64_t)add));
        }
        if (validity)
            for (Py_ssize_t i = 0; i < m; i++) {
                Py_ssize_t bit = validity_offset + s + i;
                uint64_t null = ((validity[bit >> 3] >> (bit & 7)) & 1) - 1; /* all ones for a null */
                bits[i] = (bits[i] & ~null) | (IEEE_MISSING_DOT & null);
            }
        put_high_bytes_rows(bits, m, flat + s * row_length, row_length, width, big_endian);
    }
}

static PyObject *
put_arrow_numbers(PyObject *self, PyObject *args)
{
    PyObject *objs[3];
    Py_ssize_t validity_offset, row_length, at, width;
    long long add;
    double divisor;
    int big_endian;
    if (!PyArg_ParseTuple(args, "OOnLdOnnnp:put_arrow_numbers", &objs[0], &objs[1], &validity_offset, &add,
                          &divisor, &objs[2], &row_length, &at, &width, &big_endian))
        return NULL;
    static const ArraySpec specs[3] = {
        {"values", NUMBER, 0, 1, 0}, {"validity", ANY_UINT, 1, 1, 0}, {"flat", ANY_UINT, 1, 0, 1},
    };
    Py_buffer v[3];
    if (take_all(objs, v, specs, 3) < 0)
        return NULL;
    char type = v[0].format[strspn(v[0].format, "@=<>!")];
    type = type == 'd' || type == 'f' ? type : v[0].itemsize == 4 ? 'i' : 'q';
    Py_ssize_t n = items(&v[0]), bitmap = v[1].len;
    const char *problem =
        width < 1 || width > 8 ? "the width is not 1 to 8"
        : !columns_fit(n, v[2].len, row_length, at, width) ? "the rows do not hold the values' column"
        : add && (type == 'd' || type == 'f') ? "an integer added to floating-point values"
        : bitmap && (validity_offset < 0 || validity_offset > bitmap * 8 || n > bitmap * 8 - validity_offset)
            ? "the validity bitmap does not hold a bit per value"
        : overlap(v[2].buf, v[2].len, v[0].buf, v[0].len) || overlap(v[2].buf, v[2].len, v[1].buf, bitmap)
            ? "flat overlaps the values or their bitmap"
        : NULL;
    if (problem) {
        release(v, 3);
        return PyErr_Format(PyExc_ValueError, "put_arrow_numbers: %s (%zd values of %zd bytes at %zd of rows of "
                            "%zd bytes, %zd of rows, a bitmap of %zd bytes from bit %zd)", problem, n, width, at,
                            row_length, v[2].len, bitmap, validity_offset);
    }
    Py_BEGIN_ALLOW_THREADS
    put_arrow_numbers_rows(v[0].buf, type, n, bitmap ? v[1].buf : NULL, validity_offset, (int64_t)add, divisor,
                           (uint8_t *)v[2].buf + at, row_length, width, big_endian);
    Py_END_ALLOW_THREADS
    release(v, 3);
    Py_RETURN_NONE;
}

/* strings._put_padded (flat already moved to the column's first byte): each value then blanks to
   `width`, by put_string (one block load and blend when the data holds STRING_TAIL bytes past the
   value's start). */
FOR_THIS_MACHINE static void
put_padded_rows(const uint8_t *restrict data, Py_ssize_t size, const int64_t *restrict offsets, Py_ssize_t n,
                uint8_t blank, uint8_t *restrict flat, Py_ssize_t row_length, Py_ssize_t width)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t start = offsets[i];
        put_string(flat + i * row_length, data + start, offsets[i + 1] - start, width,
                   start <= size - STRING_TAIL, blank);
    }
}

static PyObject *
put_padded(PyObject *self, PyObject *args)
{
    PyObject *objs[3];
    Py_ssize_t blank, row_length, at, width;
    if (!PyArg_ParseTuple(args, "OOnOnnn:put_padded", &objs[0], &objs[1], &blank, &objs[2], &row_length, &at,
                          &width))
        return NULL;
    static const ArraySpec specs[3] = {
        {"data", ANY_UINT, 1, 0, 0}, {"offsets", ANY_INT, 8, 1, 0}, {"flat", ANY_UINT, 1, 0, 1},
    };
    Py_buffer v[3];
    if (take_all(objs, v, specs, 3) < 0)
        return NULL;
    const uint8_t *data = v[0].buf;
    const int64_t *offsets = v[1].buf;
    uint8_t *flat = v[2].buf;
    Py_ssize_t n = items(&v[1]) > 0 ? items(&v[1]) - 1 : 0, size = v[0].len;
    const char *problem = blank < 0 || blank > 255 ? "the blank is not a byte"
                          : !columns_fit(n, v[2].len, row_length, at, width) ? "the rows do not hold the values' column"
                          : NULL;
    for (Py_ssize_t i = 0; !problem && i < n; i++)
        if (offsets[i] < 0 || offsets[i + 1] < offsets[i] || offsets[i + 1] > size
            || offsets[i + 1] - offsets[i] > width)
            problem = "offsets must rise inside data, each value no longer than the width";
    /* The loop takes data and flat as restrict pointers (put_string's block loads): rows written over
       the values being read would be undefined behaviour. */
    if (!problem && overlap(data, size, flat, v[2].len))
        problem = "flat overlaps data";
    if (problem) {
        release(v, 3);
        return PyErr_Format(PyExc_ValueError, "put_padded: %s (%zd values of %zd bytes at %zd of rows of %zd bytes, "
                            "%zd bytes of data, %zd of rows)", problem, n, width, at, row_length, size, v[2].len);
    }
    Py_BEGIN_ALLOW_THREADS
    put_padded_rows(data, size, offsets, n, (uint8_t)blank, flat + at, row_length, width);
    Py_END_ALLOW_THREADS
    release(v, 3);
    Py_RETURN_NONE;
}

/* ---- module -------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"x_run", x_run, METH_VARARGS, "hex_lines.x_run"},
    {"plain_records", dump_records, METH_VARARGS, "dmpmqmsg._plain_records"},
    {"attribute_fields", attribute_fields, METH_VARARGS, "dmpmqmsg._plain_attribute_fields"},
    {"decode_spans", decode_spans, METH_VARARGS, "dump_spans._decode_spans"},
    {"trim_and_gather", trim_and_gather, METH_VARARGS, "strings._trim_and_gather"},
    {"gather_fields", gather_fields, METH_VARARGS, "sas_numbers._gather_fields"},
    {"sas_to_arrow_time", sas_to_arrow_time, METH_VARARGS, "sas_dataset._sas_to_arrow_time"},
    {"ato_rows", ato_rows, METH_VARARGS, "tibrv.observations._ato_rows"},
    {"x_lines", x_lines, METH_VARARGS, "hex_lines._x_lines"},
    {"x_records", x_records, METH_VARARGS, "hex_lines._x_records"},
    {"put_high_bytes", put_high_bytes, METH_VARARGS, "sas_numbers._put_high_bytes"},
    {"put_padded", put_padded, METH_VARARGS, "strings._put_padded"},
    {"put_arrow_numbers", put_arrow_numbers, METH_VARARGS, "sas_numbers._put_arrow_numbers"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "The kernels of a warm read and of a write's commit compiled ahead of time (compiled.py).",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    make_utf8_dfa();
    return PyModule_Create(&module);
}
