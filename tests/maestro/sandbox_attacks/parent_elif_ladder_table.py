# expect: syntax | the program nests 155 levels deep (limit 100): split long su
# A 150-branch lookup table written honestly as an if/elif ladder (each elif nests in the previous one):
# accepted or a RecursionError before, depending on how deep the caller's stack was.
def compute_reward(metrics, difficulty):
    q = metrics["queue_length"]
    if q == 0:
        return 0.0000
    elif q == 1:
        return -0.0025
    elif q == 2:
        return -0.0050
    elif q == 3:
        return -0.0075
    elif q == 4:
        return -0.0100
    elif q == 5:
        return -0.0125
    elif q == 6:
        return -0.0150
    elif q == 7:
        return -0.0175
    elif q == 8:
        return -0.0200
    elif q == 9:
        return -0.0225
    elif q == 10:
        return -0.0250
    elif q == 11:
        return -0.0275
    elif q == 12:
        return -0.0300
    elif q == 13:
        return -0.0325
    elif q == 14:
        return -0.0350
    elif q == 15:
        return -0.0375
    elif q == 16:
        return -0.0400
    elif q == 17:
        return -0.0425
    elif q == 18:
        return -0.0450
    elif q == 19:
        return -0.0475
    elif q == 20:
        return -0.0500
    elif q == 21:
        return -0.0525
    elif q == 22:
        return -0.0550
    elif q == 23:
        return -0.0575
    elif q == 24:
        return -0.0600
    elif q == 25:
        return -0.0625
    elif q == 26:
        return -0.0650
    elif q == 27:
        return -0.0675
    elif q == 28:
        return -0.0700
    elif q == 29:
        return -0.0725
    elif q == 30:
        return -0.0750
    elif q == 31:
        return -0.0775
    elif q == 32:
        return -0.0800
    elif q == 33:
        return -0.0825
    elif q == 34:
        return -0.0850
    elif q == 35:
        return -0.0875
    elif q == 36:
        return -0.0900
    elif q == 37:
        return -0.0925
    elif q == 38:
        return -0.0950
    elif q == 39:
        return -0.0975
    elif q == 40:
        return -0.1000
    elif q == 41:
        return -0.1025
    elif q == 42:
        return -0.1050
    elif q == 43:
        return -0.1075
    elif q == 44:
        return -0.1100
    elif q == 45:
        return -0.1125
    elif q == 46:
        return -0.1150
    elif q == 47:
        return -0.1175
    elif q == 48:
        return -0.1200
    elif q == 49:
        return -0.1225
    elif q == 50:
        return -0.1250
    elif q == 51:
        return -0.1275
    elif q == 52:
        return -0.1300
    elif q == 53:
        return -0.1325
    elif q == 54:
        return -0.1350
    elif q == 55:
        return -0.1375
    elif q == 56:
        return -0.1400
    elif q == 57:
        return -0.1425
    elif q == 58:
        return -0.1450
    elif q == 59:
        return -0.1475
    elif q == 60:
        return -0.1500
    elif q == 61:
        return -0.1525
    elif q == 62:
        return -0.1550
    elif q == 63:
        return -0.1575
    elif q == 64:
        return -0.1600
    elif q == 65:
        return -0.1625
    elif q == 66:
        return -0.1650
    elif q == 67:
        return -0.1675
    elif q == 68:
        return -0.1700
    elif q == 69:
        return -0.1725
    elif q == 70:
        return -0.1750
    elif q == 71:
        return -0.1775
    elif q == 72:
        return -0.1800
    elif q == 73:
        return -0.1825
    elif q == 74:
        return -0.1850
    elif q == 75:
        return -0.1875
    elif q == 76:
        return -0.1900
    elif q == 77:
        return -0.1925
    elif q == 78:
        return -0.1950
    elif q == 79:
        return -0.1975
    elif q == 80:
        return -0.2000
    elif q == 81:
        return -0.2025
    elif q == 82:
        return -0.2050
    elif q == 83:
        return -0.2075
    elif q == 84:
        return -0.2100
    elif q == 85:
        return -0.2125
    elif q == 86:
        return -0.2150
    elif q == 87:
        return -0.2175
    elif q == 88:
        return -0.2200
    elif q == 89:
        return -0.2225
    elif q == 90:
        return -0.2250
    elif q == 91:
        return -0.2275
    elif q == 92:
        return -0.2300
    elif q == 93:
        return -0.2325
    elif q == 94:
        return -0.2350
    elif q == 95:
        return -0.2375
    elif q == 96:
        return -0.2400
    elif q == 97:
        return -0.2425
    elif q == 98:
        return -0.2450
    elif q == 99:
        return -0.2475
    elif q == 100:
        return -0.2500
    elif q == 101:
        return -0.2525
    elif q == 102:
        return -0.2550
    elif q == 103:
        return -0.2575
    elif q == 104:
        return -0.2600
    elif q == 105:
        return -0.2625
    elif q == 106:
        return -0.2650
    elif q == 107:
        return -0.2675
    elif q == 108:
        return -0.2700
    elif q == 109:
        return -0.2725
    elif q == 110:
        return -0.2750
    elif q == 111:
        return -0.2775
    elif q == 112:
        return -0.2800
    elif q == 113:
        return -0.2825
    elif q == 114:
        return -0.2850
    elif q == 115:
        return -0.2875
    elif q == 116:
        return -0.2900
    elif q == 117:
        return -0.2925
    elif q == 118:
        return -0.2950
    elif q == 119:
        return -0.2975
    elif q == 120:
        return -0.3000
    elif q == 121:
        return -0.3025
    elif q == 122:
        return -0.3050
    elif q == 123:
        return -0.3075
    elif q == 124:
        return -0.3100
    elif q == 125:
        return -0.3125
    elif q == 126:
        return -0.3150
    elif q == 127:
        return -0.3175
    elif q == 128:
        return -0.3200
    elif q == 129:
        return -0.3225
    elif q == 130:
        return -0.3250
    elif q == 131:
        return -0.3275
    elif q == 132:
        return -0.3300
    elif q == 133:
        return -0.3325
    elif q == 134:
        return -0.3350
    elif q == 135:
        return -0.3375
    elif q == 136:
        return -0.3400
    elif q == 137:
        return -0.3425
    elif q == 138:
        return -0.3450
    elif q == 139:
        return -0.3475
    elif q == 140:
        return -0.3500
    elif q == 141:
        return -0.3525
    elif q == 142:
        return -0.3550
    elif q == 143:
        return -0.3575
    elif q == 144:
        return -0.3600
    elif q == 145:
        return -0.3625
    elif q == 146:
        return -0.3650
    elif q == 147:
        return -0.3675
    elif q == 148:
        return -0.3700
    elif q == 149:
        return -0.3725
    return -1.0
