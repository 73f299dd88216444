#!/usr/bin/env python3
"""Man pages from their one source: doc/NAME.SECTION.md (the markdown the README links to) or,
for cppd.conf(5), the commented configuration file itself (packaging/cppd.conf), so that every
key is documented where its default is shown.

The markdown is a small subset: '# NAME SECTION "TITLE"' first, '## HEADING', '### SUBHEADING',
paragraphs, definition lists ('`term`' then ':   text'), code indented by four spaces, and
`code`, **bold**, *italic* inline.

Usage: md2man.py SOURCE OUTPUT [VERSION]"""
import re
import sys


def escape(text):
    text = text.replace('\\', '\\e')
    return re.sub(r"^([.'])", r'\\&\1', text)


def literal(text):
    """Options and code: '-' as the minus sign that can be typed (\\-), never hyphenated (\\%)."""
    return '\\%' + text.replace('-', '\\-')


def inline(text):
    text = escape(text)
    text = re.sub(r'`([^`]+)`', lambda m: '\\fB' + literal(m.group(1)) + '\\fR', text)
    text = re.sub(r'\*\*([^*]+)\*\*', r'\\fB\1\\fR', text)
    return re.sub(r'(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])', r'\\fI\1\\fR', text)


def markdown(source, lines, version):
    first = lines[0] if lines else ''
    m = re.match(r'# (\S+) (\d) "(.*)"$', first)
    if not m:
        sys.exit('md2man: %s: line 1 must be # NAME SECTION "TITLE", not "%s"' % (source, first))
    out = ['.TH %s %s "" "cppd %s" "%s"' % (m.group(1).upper(), m.group(2), version, m.group(3))]
    para = []
    section = None

    def block():
        """A paragraph or code block starts a new paragraph, except right under a heading."""
        if not out[-1].startswith(('.TH', '.SH', '.SS')):
            out.append('.PP')

    def flush():
        if para:
            text = inline(' '.join(para))
            if section == 'NAME':       # whatis(1) and lexgrog read "name \- description"
                text = text.replace(' - ', ' \\- ', 1)
            block()
            out.append(text)
            para.clear()

    i = 1
    while i < len(lines):
        line = lines[i]
        if line.startswith('### '):
            flush()
            out.append('.SS ' + inline(line[4:]))
        elif line.startswith('## '):
            flush()
            section = line[3:]
            out.append('.SH ' + section)
        elif line.startswith('    '):
            flush()
            block()
            out.append('.RS\n.nf')
            while i < len(lines) and (lines[i].startswith('    ') or not lines[i].strip()):
                out.append(escape(lines[i][4:]).replace('-', '\\-'))
                i += 1
            while out[-1] == '':
                out.pop()
            out.append('.fi\n.RE')
            continue
        elif i + 1 < len(lines) and lines[i + 1].startswith(':   '):
            flush()
            out.append('.TP\n' + inline(line))
            i += 1
            text = [lines[i][4:]]
            while i + 1 < len(lines) and lines[i + 1].startswith('    ') and lines[i + 1].strip():
                i += 1
                text.append(lines[i].strip())
            out.append(inline(' '.join(text)))
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return out


def conf(lines, version):
    """cppd.conf(5) from the commented configuration: a key's comments describe it."""
    out = ['.TH CPPD.CONF 5 "" "cppd %s" "call path profiler daemon"' % version,
           '.SH NAME', 'cppd.conf \\- the configuration of cppd', '.SH DESCRIPTION']
    intro, comment = [], []
    section = None
    for line in lines:
        if line.startswith('[') and line.endswith(']'):
            if section is None:
                out.append(inline(' '.join(l.lstrip('# ') for l in intro[1:] if l.strip())))
                out.append('.PP\nEvery key, with its default:')
            section = line
            out.append('.SH "%s"' % line)
            comment = []
        elif section is None:
            intro.append(line)
        elif re.match(r'#\s*[a-z_]+ =( |$)', line):
            # A key whose default is empty (none) reads "key = (empty)".
            key, value = (part.strip() for part in line.lstrip('# ').split(' =', 1))
            out.append('.TP\n\\fB%s\\fR = %s' % (key, literal(escape(value)) if value else '(empty)'))
            out.append(inline(' '.join(comment)))
            comment = []
        elif line.startswith('#'):
            comment.append(line[1:].strip())
    out += ['.SH SEE ALSO', '\\fBcppd\\fR(8), \\fBcppctl\\fR(1)']
    return out


def main():
    source, output = sys.argv[1], sys.argv[2]
    version = sys.argv[3] if len(sys.argv) > 3 else ''
    lines = open(source).read().splitlines()
    out = markdown(source, lines, version) if source.endswith('.md') else conf(lines, version)
    open(output, 'w').write('\n'.join(out) + '\n')


main()
