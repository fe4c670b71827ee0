/*
 * The tray and the medium of an ATAPI CD-ROM unit: what the guest sees
 * when the monitor ejects or changes the disc (or the guest opens the
 * tray itself), and the monitor's side of it (DriveMediumOps).
 *
 * As a real drive tells its host: the tray's state and a media event
 * (eject request, new media, media removal) for GET EVENT STATUS
 * NOTIFICATION, NOT READY / MEDIUM NOT PRESENT while the tray is open or
 * empty, and UNIT ATTENTION / MEDIUM MAY HAVE CHANGED on the first command
 * after a medium arrives. Linux's sr driver polls GET EVENT STATUS and
 * TEST UNIT READY and revalidates the disc on either.
 *
 * Locking: all of it is the channel's state, under the channel's device
 * lock. The monitor's calls take that lock for a moment each; the image
 * behind a swapped medium is opened and closed by the caller without it
 * (softmmu/drive-media.c).
 */
#include "ide-internal.h"
#include "monitor/qmp.h"

bool atapi_has_medium(const IDEUnit *u)
{
    return u->blk != NULL && !u->tray_open;
}

/* QEMU's DEVICE_TRAY_MOVED: the drive's id ("" for an anonymous one) and
 * the device's. Sent under the channel lock: qmp_event_send never blocks. */
static void send_tray_moved(const IDEUnit *u)
{
    JsonObject *data = json_object_new();
    json_object_set_string_member(data, "device", u->drive->cfg->id);
    json_object_set_boolean_member(data, "tray-open", u->tray_open);
    json_object_set_string_member(data, "id", u->qdev.id);
    qmp_event_send("DEVICE_TRAY_MOVED", data);
}

void atapi_move_tray(IDEUnit *u, bool open)
{
    if (u->tray_open == open) {
        return;
    }
    u->tray_open = open;
    if (u->blk) {
        /* The guest's medium comes or goes with the tray. */
        u->medium_generation++;
        u->media_event = open ? MEDIA_EVENT_MEDIA_REMOVAL : MEDIA_EVENT_NEW_MEDIA;
        u->unit_attention = !open;
    }
    send_tray_moved(u);
}

/* ---- the monitor's side ---- */

static bool medium_is_tray_open(void *opaque)
{
    IDEUnit *u = opaque;
    device_lock(&u->ch->qdev);
    bool open = u->tray_open;
    device_unlock(&u->ch->qdev);
    return open;
}

static bool medium_is_locked(void *opaque)
{
    IDEUnit *u = opaque;
    device_lock(&u->ch->qdev);
    bool locked = u->locked;
    device_unlock(&u->ch->qdev);
    return locked;
}

static void medium_eject_request(void *opaque, bool force)
{
    IDEUnit *u = opaque;
    device_lock(&u->ch->qdev);
    u->media_event = MEDIA_EVENT_EJECT_REQUEST;
    if (force) {
        u->locked = false;
    }
    device_unlock(&u->ch->qdev);
}

static void medium_set_tray(void *opaque, bool open)
{
    IDEUnit *u = opaque;
    device_lock(&u->ch->qdev);
    atapi_move_tray(u, open);
    device_unlock(&u->ch->qdev);
}

/*
 * Only the pointer changes hands here. A READ in flight on the old medium
 * completes later (the caller drains it, without this lock); its command
 * then sees medium_generation moved and fails with NOT READY instead of
 * going on with another disc.
 */
static BlockBackend *medium_swap(void *opaque, BlockBackend *blk)
{
    IDEUnit *u = opaque;
    device_lock(&u->ch->qdev);
    BlockBackend *old = u->blk;
    u->blk = blk;
    u->sectors = blk ? blk_getlength(blk) / IDE_SECTOR_SIZE : 0;
    u->medium_generation++;
    device_unlock(&u->ch->qdev);
    return old;
}

const DriveMediumOps atapi_medium_ops = {
    .is_tray_open = medium_is_tray_open,
    .is_locked = medium_is_locked,
    .eject_request = medium_eject_request,
    .set_tray = medium_set_tray,
    .swap_medium = medium_swap,
};
