package org.lancehost;

/**
 * A failed lance-host call: {@link #code()} is the library's error code (LANCE_ERR_*), the
 * message its text. Each code has its own subclass, so callers catch what they handle.
 */
public class LanceException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int code;

  /** An error of the library: its `LanceErrorCode` and message (use {@link #of} for the subclass of a code). */
  public LanceException(int code, String message) {
    super(message);
    this.code = code;
  }

  /** The library's error code (1 = invalid argument ... 15 = out of range). */
  public int code() {
    return code;
  }

  /** The code's name, e.g. {@code LANCE_ERR_NOT_FOUND}. */
  public String codeName() {
    return name(code);
  }

  static String name(int code) {
    switch (code) {
      case 1: return "LANCE_ERR_INVALID_ARGUMENT";
      case 2: return "LANCE_ERR_NOT_FOUND";
      case 3: return "LANCE_ERR_IO";
      case 4: return "LANCE_ERR_NOT_SUPPORTED";
      case 5: return "LANCE_ERR_INTERNAL";
      case 6: return "LANCE_ERR_PANIC";
      case 7: return "LANCE_ERR_FAILED_PRECONDITION";
      case 8: return "LANCE_ERR_UNAUTHENTICATED";
      case 9: return "LANCE_ERR_PERMISSION_DENIED";
      case 10: return "LANCE_ERR_CORRUPT";
      case 11: return "LANCE_ERR_TIMEOUT";
      case 12: return "LANCE_ERR_CANCELLED";
      case 13: return "LANCE_ERR_CONFLICT";
      case 14: return "LANCE_ERR_HOST_STREAM";
      case 15: return "LANCE_ERR_OUT_OF_RANGE";
      default: return "LANCE_ERR_" + code;
    }
  }

  /** The exception of `code` (called by the JNI glue). */
  public static LanceException of(int code, String message) {
    switch (code) {
      case 1: return new InvalidArgument(message);
      case 2: return new NotFound(message);
      case 3: return new Io(message);
      case 4: return new NotSupported(message);
      case 5: return new Internal(message);
      case 6: return new Panic(message);
      case 7: return new FailedPrecondition(message);
      case 8: return new Unauthenticated(message);
      case 9: return new PermissionDenied(message);
      case 10: return new Corrupt(message);
      case 11: return new Timeout(message);
      case 12: return new Cancelled(message);
      case 13: return new Conflict(message);
      case 14: return new HostStream(message);
      case 15: return new OutOfRange(message);
      default: return new LanceException(code, message);
    }
  }

  /** LANCE_ERR_INVALID_ARGUMENT: a bad argument (also a closed handle, an unknown option). */
  public static final class InvalidArgument extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public InvalidArgument(String m) { super(1, m); }
  }
  /** LANCE_ERR_NOT_FOUND: a table, version, column, index or file that does not exist. */
  public static final class NotFound extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public NotFound(String m) { super(2, m); }
  }
  /** LANCE_ERR_IO: storage failed. */
  public static final class Io extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public Io(String m) { super(3, m); }
  }
  /** LANCE_ERR_NOT_SUPPORTED. */
  public static final class NotSupported extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public NotSupported(String m) { super(4, m); }
  }
  /** LANCE_ERR_INTERNAL. */
  public static final class Internal extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public Internal(String m) { super(5, m); }
  }
  /** LANCE_ERR_PANIC: the library caught a panic; the call had no effect. */
  public static final class Panic extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public Panic(String m) { super(6, m); }
  }
  /** LANCE_ERR_FAILED_PRECONDITION: the state does not allow the call (e.g. a stale snapshot). */
  public static final class FailedPrecondition extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public FailedPrecondition(String m) { super(7, m); }
  }
  /** LANCE_ERR_UNAUTHENTICATED. */
  public static final class Unauthenticated extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public Unauthenticated(String m) { super(8, m); }
  }
  /** LANCE_ERR_PERMISSION_DENIED. */
  public static final class PermissionDenied extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public PermissionDenied(String m) { super(9, m); }
  }
  /** LANCE_ERR_CORRUPT: bytes (a split, a token, a file) that do not decode. */
  public static final class Corrupt extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public Corrupt(String m) { super(10, m); }
  }
  /** LANCE_ERR_TIMEOUT: a deadline passed. */
  public static final class Timeout extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public Timeout(String m) { super(11, m); }
  }
  /** LANCE_ERR_CANCELLED. */
  public static final class Cancelled extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public Cancelled(String m) { super(12, m); }
  }
  /** LANCE_ERR_CONFLICT: a concurrent commit the call cannot rebase over. */
  public static final class Conflict extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public Conflict(String m) { super(13, m); }
  }
  /** LANCE_ERR_HOST_STREAM: a stream the host supplied failed. */
  public static final class HostStream extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public HostStream(String m) { super(14, m); }
  }
  /** LANCE_ERR_OUT_OF_RANGE: a value does not fit (e.g. an integer sum overflows). */
  public static final class OutOfRange extends LanceException {
    private static final long serialVersionUID = 1L;
    /** With the message. */
    public OutOfRange(String m) { super(15, m); }
  }
}
