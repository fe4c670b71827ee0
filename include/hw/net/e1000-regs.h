/*
 * The Intel 8254x register layout the 82540EM model implements, from
 * Intel's "PCI/PCI-X Family of Gigabit Ethernet Controllers Software
 * Developer's Manual" (8254x SDM): register offsets in BAR0, their bits,
 * the descriptor formats, the EEPROM words and the M88E1011 PHY's
 * registers. Facts only; the behaviour is in hw/net/e1000*.c.
 */
#ifndef HW_NET_E1000_REGS_H
#define HW_NET_E1000_REGS_H

#define E1000_VENDOR_INTEL      0x8086
#define E1000_DEV_ID_82540EM    0x100e
#define E1000_REVISION          3
#define E1000_CLASS_ETHERNET    0x020000
#define E1000_MMIO_SIZE         0x20000     /* BAR0: 128 KiB */
#define E1000_IO_SIZE           0x40        /* BAR1: IOADDR, IODATA */
#define E1000_IOADDR            0x00
#define E1000_IODATA            0x04

/* ---- general ---- */
#define E1000_CTRL      0x0000
#define  E1000_CTRL_FD          (1u << 0)
#define  E1000_CTRL_ASDE        (1u << 5)
#define  E1000_CTRL_SLU         (1u << 6)   /* set link up */
#define  E1000_CTRL_SPD_1000    (2u << 8)
#define  E1000_CTRL_RST         (1u << 26)  /* self-clearing device reset */
#define  E1000_CTRL_VME         (1u << 30)  /* VLAN mode: tag insertion/stripping */
#define  E1000_CTRL_PHY_RST     (1u << 31)
#define E1000_STATUS    0x0008
#define  E1000_STATUS_FD        (1u << 0)
#define  E1000_STATUS_LU        (1u << 1)
#define  E1000_STATUS_SPEED_1000 (2u << 6)
#define  E1000_STATUS_ASDV_1000 (2u << 8)
#define E1000_EECD      0x0010
#define  E1000_EECD_SK          (1u << 0)   /* clock */
#define  E1000_EECD_CS          (1u << 1)   /* chip select */
#define  E1000_EECD_DI          (1u << 2)   /* data into the EEPROM */
#define  E1000_EECD_DO          (1u << 3)   /* data out of the EEPROM */
#define  E1000_EECD_FWE_MASK    (3u << 4)
#define  E1000_EECD_FWE_DIS     (1u << 4)   /* flash writes disabled */
#define  E1000_EECD_REQ         (1u << 6)
#define  E1000_EECD_GNT         (1u << 7)
#define  E1000_EECD_PRES        (1u << 8)
#define  E1000_EECD_SIZE        (1u << 9)   /* clear: 64 words, 6 address bits */
#define E1000_EERD      0x0014
#define  E1000_EERD_START       (1u << 0)
#define  E1000_EERD_DONE        (1u << 4)
#define  E1000_EERD_ADDR_SHIFT  8
#define  E1000_EERD_DATA_SHIFT  16
#define E1000_CTRL_EXT  0x0018
#define E1000_FLA       0x001c
#define E1000_MDIC      0x0020
#define  E1000_MDIC_DATA_MASK   0xffffu
#define  E1000_MDIC_REG_SHIFT   16
#define  E1000_MDIC_PHY_SHIFT   21
#define  E1000_MDIC_OP_WRITE    (1u << 26)
#define  E1000_MDIC_OP_READ     (2u << 26)
#define  E1000_MDIC_READY       (1u << 28)
#define  E1000_MDIC_INT_EN      (1u << 29)
#define  E1000_MDIC_ERROR       (1u << 30)
#define E1000_FCAL      0x0028
#define E1000_FCAH      0x002c
#define E1000_FCT       0x0030
#define E1000_VET       0x0038
#define E1000_FCTTV     0x0170
#define E1000_TXCW      0x0178
#define E1000_RXCW      0x0180
#define E1000_LEDCTL    0x0e00
#define E1000_PBA       0x1000
#define E1000_FCRTL     0x2160
#define E1000_FCRTH     0x2168

/* ---- interrupts ---- */
#define E1000_ICR       0x00c0      /* cause; read clears */
#define E1000_ITR       0x00c4      /* minimum interval, 256 ns units */
#define E1000_ICS       0x00c8      /* set causes */
#define E1000_IMS       0x00d0      /* set mask bits; reads the mask */
#define E1000_IMC       0x00d8      /* clear mask bits */
#define  E1000_ICR_TXDW         (1u << 0)   /* descriptor written back */
#define  E1000_ICR_TXQE         (1u << 1)   /* transmit queue empty */
#define  E1000_ICR_LSC          (1u << 2)   /* link status change */
#define  E1000_ICR_RXSEQ        (1u << 3)
#define  E1000_ICR_RXDMT0       (1u << 4)   /* receive descriptors below threshold */
#define  E1000_ICR_RXO          (1u << 6)
#define  E1000_ICR_RXT0         (1u << 7)   /* receiver timer */
#define  E1000_ICR_MDAC         (1u << 9)   /* MDI/O access complete */
#define  E1000_ICR_TXD_LOW      (1u << 15)
#define  E1000_ICR_SRPD         (1u << 16)
#define  E1000_ICR_VALID        0x0001f6dfu /* the causes the 82540EM has */
#define E1000_TIMER_UNIT_NS     1024        /* RDTR/RADV/TIDV/TADV units */
#define E1000_ITR_UNIT_NS       256

/* ---- receive ---- */
#define E1000_RCTL      0x0100
#define  E1000_RCTL_EN          (1u << 1)
#define  E1000_RCTL_SBP         (1u << 2)
#define  E1000_RCTL_UPE         (1u << 3)   /* unicast promiscuous */
#define  E1000_RCTL_MPE         (1u << 4)   /* multicast promiscuous */
#define  E1000_RCTL_LPE         (1u << 5)   /* long packets */
#define  E1000_RCTL_RDMTS_SHIFT 8
#define  E1000_RCTL_MO_SHIFT    12
#define  E1000_RCTL_BAM         (1u << 15)  /* accept broadcast */
#define  E1000_RCTL_BSIZE_SHIFT 16
#define  E1000_RCTL_VFE         (1u << 18)  /* VLAN filter */
#define  E1000_RCTL_BSEX        (1u << 25)  /* buffer sizes times 16 */
#define  E1000_RCTL_SECRC       (1u << 26)  /* strip the CRC */
#define E1000_RDBAL     0x2800
#define E1000_RDBAH     0x2804
#define E1000_RDLEN     0x2808
#define E1000_RDH       0x2810
#define E1000_RDT       0x2818
#define E1000_RDTR      0x2820      /* packet delay, 1.024 us units */
#define  E1000_RDTR_FPD         (1u << 31)  /* flush: fire now */
#define E1000_RXDCTL    0x2828
#define E1000_RADV      0x282c      /* absolute delay */
#define E1000_RSRPD     0x2c00
#define E1000_RXCSUM    0x5000
#define  E1000_RXCSUM_PCSS_MASK 0xffu
#define  E1000_RXCSUM_IPOFL     (1u << 8)
#define  E1000_RXCSUM_TUOFL     (1u << 9)
#define E1000_MTA       0x5200      /* 128 words: the multicast hash table */
#define E1000_MTA_WORDS 128
#define E1000_RA        0x5400      /* 16 pairs RAL/RAH */
#define E1000_RA_ENTRIES 16
#define  E1000_RAH_AV           (1u << 31)
#define E1000_VFTA      0x5600      /* 128 words: one bit per VLAN id */
#define E1000_VFTA_WORDS 128

#define E1000_RING_ALIGN        128         /* RDLEN/TDLEN granularity */
#define E1000_DESC_SIZE         16
/* Legacy receive descriptor. */
#define E1000_RXD_ADDR          0
#define E1000_RXD_LENGTH        8
#define E1000_RXD_CSUM          10
#define E1000_RXD_STATUS        12
#define E1000_RXD_ERRORS        13
#define E1000_RXD_SPECIAL       14
#define  E1000_RXD_STAT_DD      (1u << 0)
#define  E1000_RXD_STAT_EOP     (1u << 1)
#define  E1000_RXD_STAT_IXSM    (1u << 2)   /* checksums not checked */
#define  E1000_RXD_STAT_VP      (1u << 3)   /* VLAN tag stripped into special */
#define  E1000_RXD_STAT_TCPCS   (1u << 5)
#define  E1000_RXD_STAT_IPCS    (1u << 6)
#define  E1000_RXD_ERR_TCPE     (1u << 5)
#define  E1000_RXD_ERR_IPE      (1u << 6)

/* ---- transmit ---- */
#define E1000_TCTL      0x0400
#define  E1000_TCTL_EN          (1u << 1)
#define E1000_TIPG      0x0410
#define E1000_TDBAL     0x3800
#define E1000_TDBAH     0x3804
#define E1000_TDLEN     0x3808
#define E1000_TDH       0x3810
#define E1000_TDT       0x3818
#define E1000_TIDV      0x3820
#define E1000_TXDCTL    0x3828
#define E1000_TADV      0x382c
#define E1000_TSPMC     0x3830

/* Transmit descriptors: bytes 8..11 are "lower" (length, CSO/DTYP, CMD),
 * 12..15 "upper" (STA, CSS/POPTS, special). */
#define E1000_TXD_LOWER         8
#define E1000_TXD_UPPER         12
#define E1000_TXD_STA           12          /* byte: DD in bit 0 */
#define  E1000_TXD_STAT_DD      (1u << 0)
#define  E1000_TXD_CMD_EOP      (1u << 24)
#define  E1000_TXD_CMD_IFCS     (1u << 25)
#define  E1000_TXD_CMD_IC       (1u << 26)  /* legacy: insert checksum */
#define  E1000_TXD_CMD_TSE      (1u << 26)  /* data/context: TCP segmentation */
#define  E1000_TXD_CMD_RS       (1u << 27)  /* report status */
#define  E1000_TXD_CMD_RPS      (1u << 28)
#define  E1000_TXD_CMD_DEXT     (1u << 29)  /* extended: context or data */
#define  E1000_TXD_CMD_VLE      (1u << 30)
#define  E1000_TXD_CMD_IDE      (1u << 31)  /* delay the interrupt */
#define  E1000_TXD_DTYP_MASK    (0xfu << 20)
#define  E1000_TXD_DTYP_D       (1u << 20)  /* data; 0: context */
#define  E1000_TXD_LEN_MASK     0xfffffu    /* data: 20 bits; legacy: 16 */
#define  E1000_TXD_POPTS_IXSM   (1u << 8)   /* upper: insert IP checksum */
#define  E1000_TXD_POPTS_TXSM   (1u << 9)   /* upper: insert TCP/UDP checksum */
/* Context descriptor. */
#define E1000_TXC_IPCSS         0
#define E1000_TXC_IPCSO         1
#define E1000_TXC_IPCSE         2           /* 16 bits; 0: to the end */
#define E1000_TXC_TUCSS         4
#define E1000_TXC_TUCSO         5
#define E1000_TXC_TUCSE         6
#define  E1000_TXC_PAYLEN_MASK  0xfffffu    /* lower */
#define  E1000_TXC_TUCMD_TCP    (1u << 24)  /* lower: TCP (else UDP) */
#define  E1000_TXC_TUCMD_IP     (1u << 25)  /* lower: IPv4 (else IPv6) */
#define  E1000_TXC_HDRLEN_SHIFT 8           /* upper */
#define  E1000_TXC_MSS_SHIFT    16          /* upper */

/* ---- statistics: 0x4000..0x40fc, every one cleared by its read ---- */
#define E1000_STATS_FIRST       0x4000
#define E1000_STATS_LAST        0x40fc
#define E1000_MPC       0x4010      /* missed packets */
#define E1000_ROC       0x40ac
#define E1000_GPRC      0x4074
#define E1000_BPRC      0x4078
#define E1000_MPRC      0x407c
#define E1000_GPTC      0x4080
#define E1000_GORCL     0x4088
#define E1000_GORCH     0x408c
#define E1000_GOTCL     0x4090
#define E1000_GOTCH     0x4094
#define E1000_RNBC      0x40a0
#define E1000_TORL      0x40c0
#define E1000_TORH      0x40c4
#define E1000_TOTL      0x40c8
#define E1000_TOTH      0x40cc
#define E1000_TPR       0x40d0
#define E1000_TPT       0x40d4
#define E1000_MPTC      0x40f0
#define E1000_BPTC      0x40f4
#define E1000_TSCTC     0x40f8

/* ---- wake-up and manageability: present, read 0 on this model ---- */
#define E1000_WUC       0x5800
#define E1000_WUFC      0x5808
#define E1000_WUS       0x5810
#define E1000_MANC      0x5820

/* ---- the EEPROM (Microwire, 64 words) ---- */
#define E1000_EEPROM_WORDS      64
#define E1000_EEPROM_ADDR_BITS  6
#define E1000_EEPROM_READ_OP    2           /* opcode after the start bit: 10b */
#define E1000_EEPROM_ID_LED     0x04
#define E1000_EEPROM_SUBSYS_ID  0x0b
#define E1000_EEPROM_SUBSYS_VEN 0x0c
#define E1000_EEPROM_DEVICE_ID  0x0d
#define E1000_EEPROM_VENDOR_ID  0x0e
#define E1000_EEPROM_CHECKSUM   0x3f        /* makes words 0..0x3f sum to 0xbaba */
#define E1000_EEPROM_SUM        0xbaba

/* ---- the PHY: a Marvell M88E1011 at MDIO address 1 ---- */
#define E1000_PHY_ADDR          1
#define E1000_PHY_REGS          32
#define MII_BMCR                0
#define  MII_BMCR_RESET         (1u << 15)
#define  MII_BMCR_ANRESTART     (1u << 9)
#define MII_BMSR                1
#define MII_PHYID1              2
#define MII_PHYID2              3
#define MII_ANAR                4
#define MII_ANLPAR              5
#define MII_ANER                6
#define MII_CTRL1000            9
#define MII_STAT1000            10
#define MII_EXTSTAT             15
#define M88_PHY_SPEC_CTRL       16
#define M88_PHY_SPEC_STATUS     17
#define M88_EXT_PHY_SPEC_CTRL   20
#define M88E1011_PHY_ID1        0x0141
#define M88E1011_PHY_ID2        0x0c20

#endif
