"""GNU make 4.3's built-in variables: what `$(CC)` or `$(RM)` are in a Makefile that does not set them.

Source: GNU make 4.3, `src/default.c`, the `default_variables` table, as `make -p -f /dev/null` prints it (the
entries marked `# default`); GNU make manual, "Variables Used by Implicit Rules"
(https://www.gnu.org/software/make/manual/html_node/Implicit-Variables.html). The variables make sets itself
(`MAKE`, `MAKE_COMMAND`, `MAKE_VERSION`, `SHELL`, `.SHELLFLAGS`, `SUFFIXES`, ...) are set by `run.py`; `-R`
(`--no-builtin-variables`) leaves these out.
"""

from __future__ import annotations

DEFAULT_VARIABLES: dict[str, str] = {
    "AR": "ar",
    "ARFLAGS": "rv",
    "AS": "as",
    "CC": "cc",
    "CO": "co",
    "COFLAGS": "",
    "COMPILE.C": "$(COMPILE.cc)",
    "COMPILE.F": "$(FC) $(FFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c",
    "COMPILE.S": "$(CC) $(ASFLAGS) $(CPPFLAGS) $(TARGET_MACH) -c",
    "COMPILE.c": "$(CC) $(CFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c",
    "COMPILE.cc": "$(CXX) $(CXXFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c",
    "COMPILE.cpp": "$(COMPILE.cc)",
    "COMPILE.def": "$(M2C) $(M2FLAGS) $(DEFFLAGS) $(TARGET_ARCH)",
    "COMPILE.f": "$(FC) $(FFLAGS) $(TARGET_ARCH) -c",
    "COMPILE.m": "$(OBJC) $(OBJCFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c",
    "COMPILE.mod": "$(M2C) $(M2FLAGS) $(MODFLAGS) $(TARGET_ARCH)",
    "COMPILE.p": "$(PC) $(PFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -c",
    "COMPILE.r": "$(FC) $(FFLAGS) $(RFLAGS) $(TARGET_ARCH) -c",
    "COMPILE.s": "$(AS) $(ASFLAGS) $(TARGET_MACH)",
    "CPP": "$(CC) -E",
    "CTANGLE": "ctangle",
    "CWEAVE": "cweave",
    "CXX": "g++",
    "F77": "$(FC)",
    "F77FLAGS": "$(FFLAGS)",
    "FC": "f77",
    "GET": "get",
    "LD": "ld",
    "LEX": "lex",
    "LEX.l": "$(LEX) $(LFLAGS) -t",
    "LEX.m": "$(LEX) $(LFLAGS) -t",
    "LINK.C": "$(LINK.cc)",
    "LINK.F": "$(FC) $(FFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_ARCH)",
    "LINK.S": "$(CC) $(ASFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_MACH)",
    "LINK.c": "$(CC) $(CFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_ARCH)",
    "LINK.cc": "$(CXX) $(CXXFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_ARCH)",
    "LINK.cpp": "$(LINK.cc)",
    "LINK.f": "$(FC) $(FFLAGS) $(LDFLAGS) $(TARGET_ARCH)",
    "LINK.m": "$(OBJC) $(OBJCFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_ARCH)",
    "LINK.o": "$(CC) $(LDFLAGS) $(TARGET_ARCH)",
    "LINK.p": "$(PC) $(PFLAGS) $(CPPFLAGS) $(LDFLAGS) $(TARGET_ARCH)",
    "LINK.r": "$(FC) $(FFLAGS) $(RFLAGS) $(LDFLAGS) $(TARGET_ARCH)",
    "LINK.s": "$(CC) $(ASFLAGS) $(LDFLAGS) $(TARGET_MACH)",
    "LINT": "lint",
    "LINT.c": "$(LINT) $(LINTFLAGS) $(CPPFLAGS) $(TARGET_ARCH)",
    "M2C": "m2c",
    "OBJC": "cc",
    "OUTPUT_OPTION": "-o $@",
    "PC": "pc",
    "PREPROCESS.F": "$(FC) $(FFLAGS) $(CPPFLAGS) $(TARGET_ARCH) -F",
    "PREPROCESS.S": "$(CC) -E $(CPPFLAGS)",
    "PREPROCESS.r": "$(FC) $(FFLAGS) $(RFLAGS) $(TARGET_ARCH) -F",
    "RM": "rm -f",
    "TANGLE": "tangle",
    "TEX": "tex",
    "TEXI2DVI": "texi2dvi",
    "WEAVE": "weave",
    "YACC": "yacc",
    "YACC.m": "$(YACC) $(YFLAGS)",
    "YACC.y": "$(YACC) $(YFLAGS)",
}

# GNU make 4.3's built-in pattern rules as (target pattern, prerequisite patterns, terminal): `make -p -f /dev/null`,
# section "# Implicit Rules" (src/default.c `default_pattern_rules` and the suffix rules `default_suffix_rules`
# made pattern rules by `convert_to_pattern`); terminal rules are the double-colon ones (`%:: RCS/%,v`). This reader
# runs none of their recipes: a target one of them would make is unread. `-r` leaves them out.
BUILTIN_RULES: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("%.c", ("%.l",), False), ("%.c", ("%.w",), False), ("%.c", ("%.w", "%.ch"), False), ("%.c", ("%.y",), False),
    ("%.dvi", ("%.tex",), False), ("%.dvi", ("%.texi",), False), ("%.dvi", ("%.texinfo",), False),
    ("%.dvi", ("%.txinfo",), False), ("%.f", ("%.F",), False), ("%.f", ("%.r",), False), ("%.info", ("%.texi",), False),
    ("%.info", ("%.texinfo",), False), ("%.info", ("%.txinfo",), False), ("%.ln", ("%.c",), False),
    ("%.ln", ("%.l",), False), ("%.ln", ("%.y",), False), ("%.m", ("%.ym",), False), ("%.o", ("%.C",), False),
    ("%.o", ("%.F",), False), ("%.o", ("%.S",), False), ("%.o", ("%.c",), False), ("%.o", ("%.cc",), False),
    ("%.o", ("%.cpp",), False), ("%.o", ("%.f",), False), ("%.o", ("%.m",), False), ("%.o", ("%.mod",), False),
    ("%.o", ("%.p",), False), ("%.o", ("%.r",), False), ("%.o", ("%.s",), False), ("%.out", ("%",), False),
    ("%.p", ("%.web",), False), ("%.r", ("%.l",), False), ("%.s", ("%.S",), False), ("%.sym", ("%.def",), False),
    ("%.tex", ("%.w",), False), ("%.tex", ("%.w", "%.ch"), False), ("%.tex", ("%.web",), False),
    ("%", ("%.C",), False), ("%", ("%.F",), False), ("%", ("%.S",), False), ("%", ("%.c",), False),
    ("%", ("%.cc",), False), ("%", ("%.cpp",), False), ("%", ("%.f",), False), ("%", ("%.m",), False),
    ("%", ("%.mod",), False), ("%", ("%.o",), False), ("%", ("%.p",), False), ("%", ("%.r",), False),
    ("%", ("%.s",), False), ("%", ("%.sh",), False), ("%", ("%,v",), True), ("%", ("RCS/%",), True),
    ("%", ("RCS/%,v",), True), ("%", ("SCCS/s.%",), True), ("%", ("s.%",), True),
)  # fmt: skip
