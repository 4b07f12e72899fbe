import mpmath as mp
mp.mp.dps = 60
def h(v): return float(v).hex()
def split(v, bits):
    # v's leading `bits` significant bits (the hi part) and the rest rounded
    m, e = mp.frexp(v); hi = mp.floor(m * 2**bits) / 2**bits * mp.mpf(2)**e
    return float(hi), float(v - hi)
T = mp.tan(mp.pi/8)*(1+mp.mpf('1e-6')); zmax = T*T
def g(z):
    if z == 0: return mp.mpf(-1)/3
    t = mp.sqrt(z); return (mp.atan(t)/t - 1)/z
c, err = mp.chebyfit(g, [0, zmax], 12, error=True)
print("atan P (highest first):", [h(v) for v in c])
print("exp 1/n! n=2..13:", [h(1/mp.factorial(n)) for n in range(2, 14)])
print("log 2/(2k+1) k=1..11:", [h(mp.mpf(2)/(2*k+1)) for k in range(1, 12)])
print("ln2 hi42/lo", [x.hex() for x in split(mp.log(2), 42)])
print("ln2 double hi/lo", h(mp.log(2)), h(mp.log(2)-float(mp.log(2))))
print("1/ln2", h(1/mp.log(2)))
print("pi/4 hi50/lo", [x.hex() for x in split(mp.pi/4, 50)])
print("tan(pi/8)", h(mp.tan(mp.pi/8)))
print("sqrt2/2", h(mp.sqrt(2)/2))
