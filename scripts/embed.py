#!/usr/bin/env python3
"""embed.py IN OUT SYMBOL - write IN's bytes as a C array named SYMBOL."""
import sys

data = open(sys.argv[1], 'rb').read()
sym = sys.argv[3]
with open(sys.argv[2], 'w') as out:
    out.write('/* generated from %s by scripts/embed.py */\n' % sys.argv[1])
    out.write('const char %s[] = {\n' % sym)
    for i in range(0, len(data), 16):
        out.write(''.join('%d,' % b for b in data[i:i + 16]) + '\n')
    out.write('0};\nconst unsigned long %s_len = %d;\n' % (sym, len(data)))
